/**
 * CPU parameters: checkpoint leases and recipes realized into {@link io.graphlane.backend.cpu.param.CpuWeight}s
 * on a loading lane, and bound to {@link io.graphlane.backend.cpu.param.CpuParameter} slots.
 *
 * <p>Owns: the CPU {@link io.graphlane.core.backend.ParameterBackend}, the weight handle type (dense row-major
 * little-endian bytes; F32 for every floating-point checkpoint dtype, or F16/BF16 kept as they are by a backend made
 * with {@code keepingHalfPrecision}) and its reference-counted storage, and exact 16-bit float widening.
 *
 * <p>Guarantees: a materialization's leases are released exactly once and only after its exact completion, also
 * when it fails; F32 mapped data (and F16/BF16 where kept) is used in place (the weight's storage holds the mapped view, which keeps the
 * mapping alive without keeping the lease, so the checkpoint's bounded mapping cache is never exhausted by bound
 * weights); a shared weight is the same storage; {@code validateBind} names every mismatching field with expected
 * and found values, and {@code bind} cannot fail after it passed.
 *
 * <p>Refuses: a lease whose bytes do not match its spec (the materialization fails, naming both), a weight over
 * 2 GiB in one buffer, binding a closed weight, finishing a materialization twice.
 */
package io.graphlane.backend.cpu.param;
