/**
 * GGUF, llama.cpp's file format: {@link io.graphlane.checkpoint.gguf.GgufFile} reads and fully
 * validates a v2/v3 header (every count, length, type, shape, offset and the alignment checked against
 * the file before use; nothing allocated by a claimed size first), {@link io.graphlane.checkpoint.gguf.GgmlType}
 * holds ggml's tensor types and block decoding, and {@link io.graphlane.checkpoint.gguf.GgufCheckpoint}
 * presents the file as a graphlane checkpoint: leasable tensors, Hugging Face weights derived by
 * recipes (rename, q/k unpermute, dequantize), and the metadata as {@code config.json}
 * ({@link io.graphlane.checkpoint.gguf.GgufConfig}), {@code tokenizer.json} and
 * {@code tokenizer_config.json} ({@link io.graphlane.checkpoint.gguf.GgufTokenizer}), all pure
 * functions of the metadata. Refuses any file that breaks a rule, naming the file and the field.
 */
package io.graphlane.checkpoint.gguf;
