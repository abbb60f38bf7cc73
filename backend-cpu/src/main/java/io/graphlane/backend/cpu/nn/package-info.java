/**
 * The CPU implementation of the neural-ops contract ({@link io.graphlane.core.nn.NeuralOps}):
 * {@link io.graphlane.backend.cpu.nn.CpuTensor} is an off-heap F32 matrix, and
 * {@link io.graphlane.backend.cpu.nn.CpuNeuralOps} runs projections of a few input rows (decode) in SIMD
 * Java kernels on the incubating Vector API when the JVM has it, weight rows split over as many threads as
 * OpenBLAS gets, and otherwise on OpenBLAS through JavaCPP ({@code cblas_sgemm}/{@code cblas_sgemv},
 * reading the buffers in place); the other operations are loops over the same buffers, in F32, with Hugging
 * Face semantics. A weight may instead be a {@link io.graphlane.backend.cpu.nn.PackedMatrix} (BF16, F16 or
 * 8-bit blocks): the projection widens it in its kernel (for many input rows, tiles widened into F32 scratch
 * for {@code sgemm}), the embedding widens rows.
 * Attention reads the KV cache in place: with the Vector API one unit per query row and key/value head
 * ({@code VectorAttention}, scores in a per-thread array) split over the projections' threads, otherwise two small
 * {@code cblas_sgemm}s per unit with the scores in a scratch buffer the instance keeps; {@code allocationCount}
 * counts the tensors an instance allocated.
 *
 * <p>Guarantees: operations run synchronously on the calling thread (the lane's worker), so a
 * model's forward pass is ordinary lane work; a released tensor is refused rather than read.
 * Refuses: heap buffers and non-native byte order (OpenBLAS reads memory in place), shape
 * mismatches, token ids outside the vocabulary, cache positions outside the cache.
 * OpenBLAS's own thread count follows {@code OPENBLAS_NUM_THREADS} until
 * {@link io.graphlane.backend.cpu.nn.CpuNeuralBackend#setBlasThreads} sets it (and the packed kernels' with it).
 */
package io.graphlane.backend.cpu.nn;
