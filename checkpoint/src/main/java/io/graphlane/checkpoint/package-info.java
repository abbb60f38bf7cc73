/**
 * Checkpoint weights for graphlane: the validated catalogue of a Hugging Face model directory
 * ({@link io.graphlane.checkpoint.CheckpointCatalog}: one {@code model.safetensors} or an index
 * and its shards) and the {@link io.graphlane.checkpoint.CheckpointSource} that hands out
 * {@link io.graphlane.core.param.EncodedLease}s on tensor {@link io.graphlane.checkpoint.Selection}s.
 *
 * <p>Owns: memory-mapped reading (files of any size: regions below 2 GiB are mapped per lease),
 * the bounded mapping cache, lease pinning. Guarantees: every header and the index are validated
 * before any tensor byte is read; a lease pins its bytes until released exactly once; a pinned
 * shard is never evicted; a contiguous selection is never copied; a selection never maps bytes
 * outside its first and last block. Refuses, with the file, tensor and field named: everything
 * CHECKPOINTS.md lists, an unknown tensor, a selection that does not fit its tensor, a second
 * release, and acquisition when every mapping slot is pinned.
 */
package io.graphlane.checkpoint;
