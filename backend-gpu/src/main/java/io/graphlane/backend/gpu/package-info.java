/**
 * The GPU backend: one {@link io.graphlane.backend.gpu.GpuBackend} per CUDA device, lanes that
 * are non-blocking CUDA streams, completions that are CUDA events settled by one poller thread
 * per device, ordering by {@code cuStreamWaitEvent}, device and pinned memory released exactly
 * once after the exact completion of the work that used it.
 *
 * <p>Device memory ({@link io.graphlane.backend.gpu.DeviceBuffer}) comes from CUDA's stream-ordered
 * allocator: it is allocated on the lane that first uses it ({@code cuMemAllocAsync}) and goes back
 * to the device's memory pool with {@code cuMemFreeAsync} on a stream ordered behind its last use
 * (a {@code cuStreamWaitEvent} on that use's event first when it ran on another stream), so neither
 * the host nor the device ever waits for a free. The default pool keeps up to
 * {@link io.graphlane.backend.gpu.GpuOptions#memoryPoolReleaseThresholdBytes()} freed bytes for
 * reuse. A device without memory pools falls back to {@code cuMemAlloc} and {@code cuMemFree}
 * (which waits for the whole device), with frees deferred on the host to the exact completion, and
 * says so once in the log. Pinned host memory for device-to-host copies is leased from a per-backend
 * {@link io.graphlane.backend.gpu.HostBufferPool} and returned at the copy's completion (no allocation or
 * {@code cuMemFreeHost} per step, nothing freed on the event poller); buffers are freed on a thread of their own.
 *
 * <p>Each backend has a name unique in the process ({@code cuda0}, then {@code cuda0#2}, ...). A device's primary
 * context is retained once per process and kept until the process exits, so shutting a backend down never
 * frees the context under memory that other backends or their callers still touch.
 *
 * <p>Owns: CUDA library loading ({@link io.graphlane.backend.gpu.CudaLibraries}) and device
 * selection ({@link io.graphlane.backend.gpu.GpuDevices}, {@code --device N}; the driver applies
 * {@code CUDA_VISIBLE_DEVICES}, so N counts only the devices it lists).
 *
 * <p>Guarantees: without a driver, a device or a CUDA library every entry point throws one
 * {@link io.graphlane.backend.gpu.GpuUnavailableException} naming what is missing and suggesting
 * {@code --backend cpu}, with the first loading failure as its cause on every later touch. A
 * producer that fails poisons the next submission ordered after it; an asynchronous CUDA error is
 * attached to the completion whose event reported it. Memory retained by work that lost the CUDA
 * context is leaked on purpose and reported, never freed under work that may still run.
 *
 * <p>Refuses: ordering across devices (or across two backends), calls on a shut executor.
 * Never imports Pekko.
 */
package io.graphlane.backend.gpu;
