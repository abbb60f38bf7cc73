/**
 * Tokenizers: {@link io.graphlane.inference.tokenizer.TextTokenizer} loads a Hugging Face
 * {@code tokenizer.json} offline through DJL's binding, with the model's
 * {@link io.graphlane.inference.tokenizer.TokenizerConfig} ({@code tokenizer_config.json}: {@code add_bos_token},
 * {@code add_eos_token}, {@code clean_up_tokenization_spaces}, the special tokens' texts, the chat template or
 * {@code chat_template.jinja}) applied as transformers applies it; {@link io.graphlane.inference.tokenizer.StreamingDecoder}
 * emits generated text piece by piece. Guarantees: a prompt gets the BOS/EOS ids transformers' fast tokenizer would
 * give it (the config's flags when it names one, else tokenizer.json's post-processor); decoded text is cleaned up
 * ({@link io.graphlane.inference.tokenizer.CleanUpSpaces}) exactly when the config asks, streamed pieces included;
 * a stream never emits a partial UTF-8 character and never fails on one; encoding takes only the ids from the native
 * tokenizer, so no text can make it allocate per token on the Java heap (where a failed allocation would abort the
 * JVM); {@code maxTokenBytes()} bounds the text one token stands for. Refuses, naming file and field: a missing or
 * unreadable tokenizer.json, a config field of the wrong kind, a BOS/EOS token a flag asks for that is not one token.
 */
package io.graphlane.inference.tokenizer;
