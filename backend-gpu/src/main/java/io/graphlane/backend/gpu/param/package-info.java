/**
 * Weights on the GPU: {@link io.graphlane.backend.gpu.param.GpuParameterBackend} uploads checkpoint
 * bytes through pinned staging buffers that take turns (double buffering), widening F16/BF16 to F32
 * on the device, and releases the source leases only after the upload's exact completion;
 * {@link io.graphlane.backend.gpu.param.GpuTransferBackend} promotes and demotes between pinned
 * host tensors and device weights, each copy holding its own handle on its source and destination
 * ({@link io.graphlane.backend.gpu.param.GpuWeight} and {@link io.graphlane.backend.gpu.param.GpuHostTensor}
 * count handles; the last close frees) until its exact completion.
 *
 * <p>Budgets, transfer generations and eviction are left to a caller (none exists yet). This package keeps no
 * ledger of its own; a transfer's destination is simply not usable before its completion succeeded.
 */
package io.graphlane.backend.gpu.param;
