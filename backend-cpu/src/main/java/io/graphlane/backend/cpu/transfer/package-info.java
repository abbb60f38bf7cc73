/**
 * CPU residency tiers: host memory and a separately budgeted "device" pool, and the copies between them.
 *
 * <p>Owns: {@link io.graphlane.backend.cpu.transfer.CpuTransferBackend} (the CPU
 * {@link io.graphlane.core.backend.TransferBackend}), {@link io.graphlane.backend.cpu.transfer.CpuDevicePool} (the
 * budgeted device tier) and {@link io.graphlane.backend.cpu.transfer.CpuHostBuffer} (a host-tier copy).
 *
 * <p>Guarantees: a copy is a submission on a lane and its destination is published only after its exact completion
 * succeeded ({@link io.graphlane.backend.cpu.transfer.CpuTransfer#publishedDestination()}); source and destination
 * bytes are retained until that completion; a demotion leaves the device copy untouched; the pool gives bytes back
 * exactly once, when a copy's last handle closes.
 *
 * <p>Refuses: a promotion the pool cannot hold (before anything is queued, naming needed and free bytes), copies on
 * a closed lane. Admission of whole batches, generations and eviction are left to a caller
 * (none exists yet).
 */
package io.graphlane.backend.cpu.transfer;
