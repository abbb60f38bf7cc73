/**
 * The neural ops of {@code io.graphlane.core.nn} on a CUDA stream: projections through cuBLAS
 * (SGEMM, SGEMV for one row), everything else as small kernels written in CUDA C
 * ({@link io.graphlane.backend.gpu.nn.KernelSources}) and compiled at run time by NVRTC to a cubin
 * for the device's own {@code sm_XY}.
 *
 * <p>Why NVRTC rather than shipped PTX: the build needs no CUDA toolkit, and a cubin compiled for
 * the device does not depend on the driver's PTX JIT version. A GPU host needs the NVIDIA driver
 * ({@code libcuda.so.1}), {@code libnvrtc.so.12} and {@code libcublas.so.12} on the loader path
 * (a CUDA 12 toolkit, or the {@code nvidia-cuda-nvrtc-cu12} and {@code nvidia-cublas-cu12} wheels
 * with their {@code lib} folders on {@code LD_LIBRARY_PATH}).
 *
 * <p>Guarantees: operands are checked before anything is enqueued; operations only enqueue (host
 * values go up by copies ordered on the stream), and only {@code toHost}/{@code argmax} wait;
 * {@code copyToHost} enqueues a copy into pinned memory that is read after the lane work
 * completed, so stage work never blocks its lane actor; released tensors and per-call scratch are
 * freed at the exact completion of the work enqueued before the release (or, after the lane's
 * stream was shut down, once it drained). The embedded pipeline runs the Llama stages on these ops
 * through {@code io.graphlane.inference.gpu.GpuInference} ({@code graphlane run --backend gpu}). Refuses: attention over more
 * positions than one block's shared memory holds (about 12k with the default 48 KiB).
 */
package io.graphlane.backend.gpu.nn;
