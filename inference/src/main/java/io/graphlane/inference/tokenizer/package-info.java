/**
 * Tokenizers: {@link io.graphlane.inference.tokenizer.TextTokenizer} loads a Hugging Face
 * {@code tokenizer.json} offline through DJL's binding; {@link io.graphlane.inference.tokenizer.StreamingDecoder}
 * emits generated text piece by piece. Guarantees: a stream never emits a partial UTF-8
 * character and never fails on one; encoding takes only the ids from the native tokenizer, so no text can make it
 * allocate per token on the Java heap (where a failed allocation would abort the JVM); {@code maxTokenBytes()} bounds
 * the text one token stands for. Refuses: a missing or unreadable tokenizer.json, named.
 */
package io.graphlane.inference.tokenizer;
