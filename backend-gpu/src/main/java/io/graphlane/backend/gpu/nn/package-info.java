/**
 * The neural ops of {@code io.graphlane.core.nn} on a CUDA stream: projections through cuBLAS
 * (SGEMM, SGEMV for one row; over a BF16 or F16 weight held as stored, GemmEx with the input rounded to the
 * weight's type and F32 accumulation), everything else as small kernels written in CUDA C
 * ({@link io.graphlane.backend.gpu.nn.KernelSources}) and compiled at run time by NVRTC to a cubin
 * for the device's own {@code sm_XY}.
 *
 * <p>Why NVRTC rather than shipped PTX: the build needs no CUDA toolkit, and a cubin compiled for
 * the device does not depend on the driver's PTX JIT version. A GPU host needs the NVIDIA driver
 * ({@code libcuda.so.1}) and, through JavaCPP's CUDA preset, {@code libnvrtc.so.N}, {@code libcublas.so.N},
 * {@code libcublasLt.so.N} and {@code libcudart.so.N} of the build's CUDA major N (13 by default, 12 with
 * the Maven profile {@code cuda12}): from a CUDA toolkit on the loader path, or the nvidia wheels
 * ({@code nvidia-cuda-nvrtc}, {@code nvidia-cublas}, {@code nvidia-cuda-runtime}) of the {@code python3} on
 * {@code PATH}, whose {@code lib} folders the backend searches itself.
 *
 * <p>Guarantees: operands are checked before anything is enqueued; operations only enqueue (host
 * values go up by copies ordered on the stream), and only {@code toHost}/{@code argmax} wait;
 * {@code copyToHost} enqueues a copy into pinned memory that is read after the lane work
 * completed, so stage work never blocks its lane actor; released tensors and per-call scratch are
 * freed at the exact completion of the work enqueued before the release (or, after the lane's
 * stream was shut down, once it drained). The embedded pipeline runs the Llama stages on these ops
 * through {@code io.graphlane.inference.gpu.GpuInference} ({@code graphlane run --backend gpu}). Refuses: attention over more
 * positions than one block's shared memory holds (about 12k with the default 48 KiB); a layer's sliding window bounds
 * the positions a query attends to, so windowed layers run at any sequence length.
 */
package io.graphlane.backend.gpu.nn;
