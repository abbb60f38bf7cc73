/**
 * Chat templates: {@link io.graphlane.inference.chat.ChatTemplate} renders a conversation with the Jinja
 * template of a model ({@code chat_template.jinja}, which wins as in transformers' loader, else {@code chat_template}
 * of its {@code tokenizer_config.json}) as Hugging Face's {@code apply_chat_template} does
 * ({@code trim_blocks}, {@code lstrip_blocks}, {@code messages}, {@code add_generation_prompt}, {@code bos_token},
 * {@code eos_token}, {@code raise_exception}). Guarantees: a template's {@code raise_exception(message)} surfaces as a
 * {@link io.graphlane.inference.chat.ChatTemplateException} with that message; any other fatal template error names
 * its line; a render stays within its {@link io.graphlane.inference.chat.ChatTemplateLimits} (output size, time,
 * range length, list and map size, macro depth) and is refused naming the limit it went past. Refuses: a
 * {@code chat_template} that is neither a string nor a list holding one named {@code default}, naming the file and
 * field; a template that loads another ({@code include}, {@code import}, {@code from}, {@code extends}) or any file. The rendered prompt is tokenized with
 * {@link io.graphlane.inference.api.TokenCodec#encodeAsWritten}: special-token text becomes its token, nothing is added.
 */
package io.graphlane.inference.chat;
