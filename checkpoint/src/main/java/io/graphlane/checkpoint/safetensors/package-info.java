/**
 * The safetensors file format: {@link io.graphlane.checkpoint.safetensors.SafetensorsHeader}
 * reads and fully validates a header (length limit, UTF-8, strict JSON, entries, offsets that
 * tile the data region exactly) before anything else may use it, and
 * {@link io.graphlane.checkpoint.safetensors.SafetensorsWriter} writes dense tensors with
 * {@code __metadata__} as a file the reader accepts. Refuses any header that breaks a rule, naming
 * the file, the tensor and the field; never allocates by a claimed size before checking it.
 */
package io.graphlane.checkpoint.safetensors;
