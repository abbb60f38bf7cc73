package io.graphlane.backend.gpu.nn;

import java.util.List;

/**
 * The CUDA C source of the backend's small kernels (everything that is not a GEMM/GEMV), compiled
 * at run time by NVRTC for the device's own architecture. Kept as plain text so a GPU host needs
 * only the driver, NVRTC and cuBLAS: no nvcc, no prebuilt PTX to match the driver.
 * Every kernel is {@code extern "C"} so its name is not mangled; F32 arithmetic throughout, with no
 * fast-math, so results stay within 1e-3 of the PyTorch reference. 16-bit weights held as stored are read
 * by the embedding kernels of their type; a projection's F32 input is rounded to the weight's type
 * ({@code gl_f32_to_bf16}, {@code gl_f32_to_f16}, round to nearest even) for cuBLAS's GemmEx.
 */
public final class KernelSources {
    /** Threads per block of every row-wise kernel; a power of two for the tree reductions. */
    public static final int BLOCK = 256;

    /** The names of the kernels {@link #llama()} defines, in the order they appear. */
    public static final List<String> KERNELS = List.of(
            "gl_embedding", "gl_rms_norm", "gl_rope", "gl_gelu_mul", "gl_gelu_tanh_mul", "gl_silu_mul", "gl_add", "gl_add_bias",
            "gl_softmax_rows", "gl_attention", "gl_scale", "gl_softcap", "gl_argmax_rows", "gl_f16_to_f32", "gl_bf16_to_f32",
            "gl_embedding_bf16", "gl_embedding_f16", "gl_f32_to_bf16", "gl_f32_to_f16");

    private KernelSources() {
    }

    /** The NVRTC options for a device of compute capability {@code major.minor}. */
    public static List<String> compileOptions(int major, int minor) {
        if (major < 5) {
            throw new IllegalArgumentException("compute capability " + major + "." + minor + " is older than 5.0, which CUDA 12 dropped");
        }
        return List.of("--gpu-architecture=sm_" + major + minor, "--std=c++17", "-DGL_BLOCK=" + BLOCK);
    }

    /** The whole translation unit. */
    public static String llama() {
        return """
            // graphlane Llama-family kernels (F32). Compiled by NVRTC at run time.
            #ifndef GL_BLOCK
            #define GL_BLOCK 256
            #endif
            #define GL_NEG_INF __int_as_float(0xff800000)

            __device__ float gl_block_sum(float v, float* shared) {
                int t = threadIdx.x;
                shared[t] = v;
                __syncthreads();
                for (int s = blockDim.x / 2; s > 0; s >>= 1) {
                    if (t < s) shared[t] += shared[t + s];
                    __syncthreads();
                }
                float r = shared[0];
                __syncthreads();
                return r;
            }

            __device__ float gl_block_max(float v, float* shared) {
                int t = threadIdx.x;
                shared[t] = v;
                __syncthreads();
                for (int s = blockDim.x / 2; s > 0; s >>= 1) {
                    if (t < s) shared[t] = fmaxf(shared[t], shared[t + s]);
                    __syncthreads();
                }
                float r = shared[0];
                __syncthreads();
                return r;
            }

            extern "C" __global__ void gl_embedding(const float* table, const int* ids, float* out, int rows, int cols) {
                int r = blockIdx.x;
                if (r >= rows) return;
                const float* src = table + (long long) ids[r] * cols;
                for (int c = threadIdx.x; c < cols; c += blockDim.x) out[(long long) r * cols + c] = src[c];
            }

            // out = x / rms(x) * (offset + w): offset 0 for Llama's norms, 1 for Gemma's (1 + w)
            extern "C" __global__ void gl_rms_norm(const float* x, const float* w, float* out, int rows, int cols, float eps,
                                                   float offset) {
                __shared__ float shared[GL_BLOCK];
                int r = blockIdx.x;
                if (r >= rows) return;
                const float* row = x + (long long) r * cols;
                float ss = 0.0f;
                for (int c = threadIdx.x; c < cols; c += blockDim.x) ss += row[c] * row[c];
                float inv = rsqrtf(gl_block_sum(ss, shared) / cols + eps);
                for (int c = threadIdx.x; c < cols; c += blockDim.x) out[(long long) r * cols + c] = row[c] * inv * (offset + w[c]);
            }

            // Rotate-half RoPE from a host-computed table: in each head the pair (i, i + rotaryDim/2) of the first
            // rotaryDim features turns by pos * invFreq[i], cos and sin scaled by `scaling`; the rest of the head stays.
            extern "C" __global__ void gl_rope(float* x, const int* pos, const float* invFreq, int rows, int cols, int headDim,
                                               int rotaryDim, float scaling) {
                int half = rotaryDim / 2;
                int headsPerRow = cols / headDim;
                long long pairs = (long long) rows * headsPerRow * half;
                for (long long p = blockIdx.x * (long long) blockDim.x + threadIdx.x; p < pairs; p += (long long) gridDim.x * blockDim.x) {
                    int i = (int) (p % half);
                    long long headIndex = p / half;
                    int r = (int) (headIndex / headsPerRow);
                    int h = (int) (headIndex % headsPerRow);
                    float angle = (float) pos[r] * invFreq[i];
                    float c = cosf(angle) * scaling, s = sinf(angle) * scaling;
                    float* head = x + (long long) r * cols + (long long) h * headDim;
                    float a = head[i], b = head[i + half];
                    head[i] = a * c - b * s;
                    head[i + half] = b * c + a * s;
                }
            }

            extern "C" __global__ void gl_gelu_mul(const float* gate, const float* up, float* out, long long n) {
                for (long long i = blockIdx.x * (long long) blockDim.x + threadIdx.x; i < n; i += (long long) gridDim.x * blockDim.x) {
                    float g = gate[i];
                    out[i] = 0.5f * g * (1.0f + erff(g * 0.70710678118654752f)) * up[i];
                }
            }

            extern "C" __global__ void gl_gelu_tanh_mul(const float* gate, const float* up, float* out, long long n) {
                for (long long i = blockIdx.x * (long long) blockDim.x + threadIdx.x; i < n; i += (long long) gridDim.x * blockDim.x) {
                    float g = gate[i];
                    out[i] = 0.5f * g * (1.0f + tanhf(0.7978845608028654f * (g + 0.044715f * g * g * g))) * up[i];
                }
            }

            extern "C" __global__ void gl_silu_mul(const float* gate, const float* up, float* out, long long n) {
                for (long long i = blockIdx.x * (long long) blockDim.x + threadIdx.x; i < n; i += (long long) gridDim.x * blockDim.x) {
                    float g = gate[i];
                    out[i] = g / (1.0f + expf(-g)) * up[i];
                }
            }

            extern "C" __global__ void gl_add(const float* a, const float* b, float* out, long long n) {
                for (long long i = blockIdx.x * (long long) blockDim.x + threadIdx.x; i < n; i += (long long) gridDim.x * blockDim.x) {
                    out[i] = a[i] + b[i];
                }
            }

            extern "C" __global__ void gl_add_bias(float* x, const float* bias, int rows, int cols) {
                long long n = (long long) rows * cols;
                for (long long i = blockIdx.x * (long long) blockDim.x + threadIdx.x; i < n; i += (long long) gridDim.x * blockDim.x) {
                    x[i] += bias[i % cols];
                }
            }

            extern "C" __global__ void gl_softmax_rows(float* x, int rows, int cols) {
                __shared__ float shared[GL_BLOCK];
                int r = blockIdx.x;
                if (r >= rows) return;
                float* row = x + (long long) r * cols;
                float m = GL_NEG_INF;
                for (int c = threadIdx.x; c < cols; c += blockDim.x) m = fmaxf(m, row[c]);
                m = gl_block_max(m, shared);
                float sum = 0.0f;
                for (int c = threadIdx.x; c < cols; c += blockDim.x) {
                    float e = expf(row[c] - m);
                    row[c] = e;
                    sum += e;
                }
                float inv = 1.0f / gl_block_sum(sum, shared);
                for (int c = threadIdx.x; c < cols; c += blockDim.x) row[c] *= inv;
            }

            // One block per (query row, head). The row at position p attends to keys j in [first, p] with
            // p - j < window (Hugging Face's sliding_window_overlay: kv_idx > q_idx - sliding_window), so
            // first = max(0, p - window + 1); window = INT_MAX is plain causal attention. Scores live in dynamic
            // shared memory, one float per attended key: min(maxPosition + 1, window) floats.
            extern "C" __global__ void gl_attention(const float* q, const float* keys, const float* values, const int* pos,
                                                   float* out, int rows, int heads, int kvHeads, int headDim, float scale,
                                                   int window, float softcap) {
                extern __shared__ float scores[];
                __shared__ float shared[GL_BLOCK];
                int r = blockIdx.x / heads;
                int h = blockIdx.x % heads;
                if (r >= rows) return;
                int kvh = h / (heads / kvHeads);
                int qStride = heads * headDim, kvStride = kvHeads * headDim;
                const float* qh = q + (long long) r * qStride + (long long) h * headDim;
                int last = pos[r];
                int first = last - window + 1;
                if (first < 0) first = 0;
                int seen = last - first + 1;
                float m = GL_NEG_INF;
                for (int t = threadIdx.x; t < seen; t += blockDim.x) {
                    const float* k = keys + (long long) (first + t) * kvStride + (long long) kvh * headDim;
                    float dot = 0.0f;
                    for (int d = 0; d < headDim; d++) dot += qh[d] * k[d];
                    dot *= scale;
                    // Gemma 2's attn_logit_softcapping: cap * tanh(score / cap), before the softmax; 0 is none
                    if (softcap > 0.0f) dot = softcap * tanhf(dot / softcap);
                    scores[t] = dot;
                    m = fmaxf(m, dot);
                }
                m = gl_block_max(m, shared);
                float sum = 0.0f;
                for (int t = threadIdx.x; t < seen; t += blockDim.x) {
                    float e = expf(scores[t] - m);
                    scores[t] = e;
                    sum += e;
                }
                float inv = 1.0f / gl_block_sum(sum, shared);
                float* o = out + (long long) r * qStride + (long long) h * headDim;
                for (int d = threadIdx.x; d < headDim; d += blockDim.x) {
                    float acc = 0.0f;
                    for (int t = 0; t < seen; t++) {
                        acc += scores[t] * values[(long long) (first + t) * kvStride + (long long) kvh * headDim + d];
                    }
                    o[d] = acc * inv;
                }
            }

            extern "C" __global__ void gl_scale(float* x, float factor, long long n) {
                for (long long i = blockIdx.x * (long long) blockDim.x + threadIdx.x; i < n; i += (long long) gridDim.x * blockDim.x) {
                    x[i] *= factor;
                }
            }

            extern "C" __global__ void gl_softcap(float* x, float cap, long long n) {
                for (long long i = blockIdx.x * (long long) blockDim.x + threadIdx.x; i < n; i += (long long) gridDim.x * blockDim.x) {
                    x[i] = cap * tanhf(x[i] / cap);
                }
            }

            extern "C" __global__ void gl_argmax_rows(const float* x, int* out, int rows, int cols) {
                __shared__ float bestValue[GL_BLOCK];
                __shared__ int bestIndex[GL_BLOCK];
                int r = blockIdx.x;
                if (r >= rows) return;
                const float* row = x + (long long) r * cols;
                float v = GL_NEG_INF;
                int idx = cols;
                for (int c = threadIdx.x; c < cols; c += blockDim.x) {
                    if (row[c] > v || (row[c] == v && c < idx)) { v = row[c]; idx = c; }
                }
                int t = threadIdx.x;
                bestValue[t] = v;
                bestIndex[t] = idx;
                __syncthreads();
                for (int s = blockDim.x / 2; s > 0; s >>= 1) {
                    if (t < s) {
                        float ov = bestValue[t + s];
                        int oi = bestIndex[t + s];
                        if (ov > bestValue[t] || (ov == bestValue[t] && oi < bestIndex[t])) { bestValue[t] = ov; bestIndex[t] = oi; }
                    }
                    __syncthreads();
                }
                if (t == 0) out[r] = bestIndex[0] == cols ? 0 : bestIndex[0];
            }

            // IEEE half to float by bits, so no cuda_fp16.h include path is needed.
            __device__ float gl_half_bits_to_float(unsigned short h) {
                unsigned int sign = (h & 0x8000u) << 16;
                unsigned int exponent = (h >> 10) & 0x1fu;
                unsigned int mantissa = h & 0x3ffu;
                unsigned int bits;
                if (exponent == 0) {
                    if (mantissa == 0) {
                        bits = sign;
                    } else {
                        exponent = 127 - 15 + 1;
                        while ((mantissa & 0x400u) == 0) { mantissa <<= 1; exponent--; }
                        mantissa &= 0x3ffu;
                        bits = sign | (exponent << 23) | (mantissa << 13);
                    }
                } else if (exponent == 0x1f) {
                    bits = sign | 0x7f800000u | (mantissa << 13);
                } else {
                    bits = sign | ((exponent + 127 - 15) << 23) | (mantissa << 13);
                }
                return __uint_as_float(bits);
            }

            extern "C" __global__ void gl_f16_to_f32(const unsigned short* in, float* out, long long n) {
                for (long long i = blockIdx.x * (long long) blockDim.x + threadIdx.x; i < n; i += (long long) gridDim.x * blockDim.x) {
                    out[i] = gl_half_bits_to_float(in[i]);
                }
            }

            extern "C" __global__ void gl_bf16_to_f32(const unsigned short* in, float* out, long long n) {
                for (long long i = blockIdx.x * (long long) blockDim.x + threadIdx.x; i < n; i += (long long) gridDim.x * blockDim.x) {
                    out[i] = __uint_as_float(((unsigned int) in[i]) << 16);
                }
            }

            extern "C" __global__ void gl_embedding_bf16(const unsigned short* table, const int* ids, float* out, int rows, int cols) {
                int r = blockIdx.x;
                if (r >= rows) return;
                const unsigned short* src = table + (long long) ids[r] * cols;
                for (int c = threadIdx.x; c < cols; c += blockDim.x) {
                    out[(long long) r * cols + c] = __uint_as_float(((unsigned int) src[c]) << 16);
                }
            }

            extern "C" __global__ void gl_embedding_f16(const unsigned short* table, const int* ids, float* out, int rows, int cols) {
                int r = blockIdx.x;
                if (r >= rows) return;
                const unsigned short* src = table + (long long) ids[r] * cols;
                for (int c = threadIdx.x; c < cols; c += blockDim.x) out[(long long) r * cols + c] = gl_half_bits_to_float(src[c]);
            }

            // float to bfloat16 bits, round to nearest even; a NaN stays a (quiet) NaN
            __device__ unsigned short gl_float_to_bf16_bits(float f) {
                unsigned int u = __float_as_uint(f);
                if ((u & 0x7fffffffu) > 0x7f800000u) return (unsigned short) ((u >> 16) | 0x40u);
                u += 0x7fffu + ((u >> 16) & 1u);
                return (unsigned short) (u >> 16);
            }

            extern "C" __global__ void gl_f32_to_bf16(const float* in, unsigned short* out, long long n) {
                for (long long i = blockIdx.x * (long long) blockDim.x + threadIdx.x; i < n; i += (long long) gridDim.x * blockDim.x) {
                    out[i] = gl_float_to_bf16_bits(in[i]);
                }
            }

            // float to IEEE half bits by the PTX conversion (round to nearest even), so no cuda_fp16.h is needed
            extern "C" __global__ void gl_f32_to_f16(const float* in, unsigned short* out, long long n) {
                for (long long i = blockIdx.x * (long long) blockDim.x + threadIdx.x; i < n; i += (long long) gridDim.x * blockDim.x) {
                    unsigned short h;
                    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(in[i]));
                    out[i] = h;
                }
            }
            """;
    }

    /**
     * The same float-to-bfloat16 rounding as the device's {@code gl_float_to_bf16_bits} (round to nearest even, a NaN
     * kept a quiet NaN), on the host: the tests hold it against the exact nearest bfloat16.
     */
    public static short floatToBf16Bits(float f) {
        int u = Float.floatToRawIntBits(f);
        if ((u & 0x7fffffff) > 0x7f800000) {
            return (short) ((u >>> 16) | 0x40);
        }
        u += 0x7fff + ((u >>> 16) & 1);
        return (short) (u >>> 16);
    }

    /**
     * The same half-to-float conversion as the device's {@code gl_half_bits_to_float}, on the host:
     * the tests hold it against {@link Float#float16ToFloat}-equivalent arithmetic for every bit pattern.
     */
    public static float halfBitsToFloat(short half) {
        int h = half & 0xffff;
        int sign = (h & 0x8000) << 16;
        int exponent = (h >>> 10) & 0x1f;
        int mantissa = h & 0x3ff;
        int bits;
        if (exponent == 0) {
            if (mantissa == 0) {
                bits = sign;
            } else {
                exponent = 127 - 15 + 1;
                while ((mantissa & 0x400) == 0) {
                    mantissa <<= 1;
                    exponent--;
                }
                mantissa &= 0x3ff;
                bits = sign | (exponent << 23) | (mantissa << 13);
            }
        } else if (exponent == 0x1f) {
            bits = sign | 0x7f800000 | (mantissa << 13);
        } else {
            bits = sign | ((exponent + 127 - 15) << 23) | (mantissa << 13);
        }
        return Float.intBitsToFloat(bits);
    }
}
