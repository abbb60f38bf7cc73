package io.graphlane.core.nn;

/**
 * The neural operations a decoder-only transformer (the Llama family) needs, over one
 * backend-native tensor type. Every tensor is a dense, row-major F32 matrix of
 * {@code rows × cols}; a vector is a matrix of one row. Activations hold one row per
 * position, weights hold one row per output feature (the Hugging Face {@code Linear} layout).
 *
 * <p>An instance issues its operations on one lane, in call order: a CPU implementation
 * runs them on the calling thread (the lane's worker), a device implementation enqueues
 * them on the lane's stream. Only {@link #toHost} and {@link #argmax} hand values to the
 * host, and they return only once those values are readable; {@link #copyToHost} starts a copy
 * that lane work can issue without waiting for the device.
 *
 * <p>Every operation checks its operands' shapes before touching data and throws
 * {@link ShapeMismatchException} naming the operation, the operand, the expected and the
 * found shape. Unless an operation says otherwise, an output must not overlap an input.
 *
 * @param <T> the backend-native tensor (a host buffer, a device pointer)
 */
public interface NeuralOps<T> {
    /** The attention window of a layer that attends to every earlier position (full causal attention). */
    int NO_WINDOW = Integer.MAX_VALUE;

    /** A new zero-filled {@code rows × cols} tensor owned by the caller until {@link #release}. */
    T allocate(int rows, int cols);

    /** A new {@code rows × cols} tensor holding a copy of {@code data} (row-major, length rows·cols). */
    T fromHost(float[] data, int rows, int cols);

    /** Copies {@code tensor} into {@code out} (length rows·cols, row-major) once its values are readable. */
    void toHost(T tensor, float[] out);

    /**
     * Starts copying {@code tensor} to the host after the operations issued so far on this lane,
     * without waiting for them: the copy is readable once the lane work that issued this call has
     * completed (at once where {@link HostCopy#readableNow} says so). The caller closes it. The
     * default copies at once through {@link #toHost}; a device implementation enqueues an
     * asynchronous copy, so lane work that only enqueues never blocks its thread.
     */
    default HostCopy copyToHost(T tensor) {
        float[] values = new float[Math.multiplyExact(rows(tensor), cols(tensor))];
        toHost(tensor, values);
        return HostCopy.ofHost(values, rows(tensor), cols(tensor));
    }

    /** The number of rows of {@code tensor}. */
    int rows(T tensor);

    /** The number of columns of {@code tensor}. */
    int cols(T tensor);

    /**
     * A view of rows {@code [fromRow, toRow)} of {@code tensor} that shares its storage: writes
     * through the view are writes to the tensor. A view is never released on its own; it is
     * valid while its tensor is.
     */
    T rowSlice(T tensor, int fromRow, int toRow);

    /**
     * Frees the storage of a tensor made by {@link #allocate} or {@link #fromHost}, exactly once.
     * Work already issued that reads it completes first; using it afterwards is an error.
     *
     * @throws IllegalStateException if the tensor was already released, or is a view
     */
    void release(T tensor);

    /** Copies {@code source} into {@code out}, which has the same shape (typically a row slice of a cache). */
    void copy(T source, T out);

    /**
     * Gathers embedding rows: {@code out[i] = table[tokenIds[i]]}.
     *
     * @throws IndexOutOfBoundsException naming the position and the id if an id is outside {@code [0, table rows)}
     */
    void embedding(T table, int[] tokenIds, T out);

    /**
     * Root-mean-square normalization of every row, computed in F32:
     * {@code out = x · 1/sqrt(mean(x²) + eps) · weight}, with {@code weight} of {@code 1 × cols}.
     * {@code out} may be {@code x}.
     */
    void rmsNorm(T x, T weight, float eps, T out);

    /**
     * The residual add fused with the norm that follows it: {@code x = x + residual}, then
     * {@code out = rmsNorm(x, weight, eps)}. {@code out} must not overlap {@code x} or {@code residual}.
     * The default composes {@link #add} and {@link #rmsNorm}; a backend may do both in fewer passes over memory.
     */
    default void addRmsNorm(T x, T residual, T weight, float eps, T out) {
        add(x, residual, x);
        rmsNorm(x, weight, eps, out);
    }

    /**
     * {@link #rmsNorm(Object, Object, float, Object) RMSNorm} whose scale is {@code weightOffset + weight}, the offset
     * added in F32: {@code out = x · 1/sqrt(mean(x²) + eps) · (weightOffset + weight)}. Gemma's norms scale by
     * {@code 1 + weight} (its checkpoints store the difference from 1); offset 0 is {@link #rmsNorm(Object, Object, float, Object)}.
     * The default serves offset 0 only; a backend that runs Gemma overrides it.
     *
     * @throws UnsupportedOperationException for a non-zero offset on a backend without it
     */
    default void rmsNorm(T x, T weight, float eps, float weightOffset, T out) {
        if (weightOffset != 0f) {
            throw new UnsupportedOperationException(getClass().getSimpleName() + " has no RMSNorm with a weight offset (Gemma's 1 + w)");
        }
        rmsNorm(x, weight, eps, out);
    }

    /**
     * {@link #addRmsNorm(Object, Object, Object, float, Object)} with the norm's scale {@code weightOffset + weight}
     * (see {@link #rmsNorm(Object, Object, float, float, Object)}). The default composes {@link #add} and that norm.
     */
    default void addRmsNorm(T x, T residual, T weight, float eps, float weightOffset, T out) {
        if (weightOffset == 0f) {
            addRmsNorm(x, residual, weight, eps, out);
            return;
        }
        add(x, residual, x);
        rmsNorm(x, weight, eps, weightOffset, out);
    }

    /** A linear projection without bias: {@code out = x · weightᵀ}, x {@code n × k}, weight {@code m × k}, out {@code n × m}. */
    void linear(T x, T weight, T out);

    /** Adds the {@code 1 × cols} {@code bias} to every row of {@code x}, in place. */
    void addBias(T x, T bias);

    /**
     * Plain rotary position embedding with base {@code theta} over the whole head: {@link #rope(Object, int[], int, RotaryTable)}
     * with {@link RotaryTable#standard}.
     */
    default void rope(T x, int[] positions, int headDim, float theta) {
        rope(x, positions, headDim, RotaryTable.standard(headDim, theta));
    }

    /**
     * Rotary position embedding in the rotate-half layout (Hugging Face Llama, not interleaved),
     * in place: each row {@code r} is a sequence of heads of {@code headDim} features at position
     * {@code positions[r]}; in each head the pair {@code (i, i + rotaryDim/2)} of the first {@code table.rotaryDim()}
     * features rotates by the angle {@code positions[r] · table.frequency(i)}, with cos and sin scaled by
     * {@code table.attentionScaling()}; features past the rotary width are left as they are.
     */
    void rope(T x, int[] positions, int headDim, RotaryTable table);

    /** {@link #ropeQk(Object, Object, int[], int, RotaryTable)} with {@link RotaryTable#standard}. */
    default void ropeQk(T q, T k, int[] positions, int headDim, float theta) {
        ropeQk(q, k, positions, headDim, RotaryTable.standard(headDim, theta));
    }

    /**
     * {@link #rope} on the queries {@code q} and the keys {@code k} of the same rows (each with its own
     * head count), in place. The default rotates one, then the other; a backend may share the angles.
     */
    default void ropeQk(T q, T k, int[] positions, int headDim, RotaryTable table) {
        rope(q, positions, headDim, table);
        rope(k, positions, headDim, table);
    }

    /**
     * RMSNorm of every head of every row, in place: row {@code r} of {@code x} is a sequence of heads of
     * {@code headDim} features, each normalized on its own and multiplied by {@code weight} ({@code 1 × headDim}),
     * as Qwen3 norms its queries and keys before RoPE.
     */
    void rmsNormHeads(T x, T weight, float eps, int headDim);

    /**
     * {@link #rmsNormHeads(Object, Object, float, int)} with the scale {@code weightOffset + weight}, the offset added in
     * F32, as Gemma 3 norms its queries and keys ({@code 1 + w}). The default serves offset 0 only.
     *
     * @throws UnsupportedOperationException for a non-zero offset on a backend without it
     */
    default void rmsNormHeads(T x, T weight, float eps, int headDim, float weightOffset) {
        if (weightOffset != 0f) {
            throw new UnsupportedOperationException(getClass().getSimpleName() + " has no per-head RMSNorm with a weight offset (Gemma's 1 + w)");
        }
        rmsNormHeads(x, weight, eps, headDim);
    }

    /**
     * Causal grouped-query attention over a key/value cache. Row {@code r} of {@code q}
     * ({@code headCount · headDim} features) attends to cache rows {@code [0, positions[r]]} of
     * {@code keys} and {@code values} ({@code kvHeadCount · headDim} features each), which must
     * already hold those positions; query head {@code h} reads key/value head
     * {@code h / (headCount / kvHeadCount)}. Scores are scaled by {@code 1/sqrt(headDim)} and
     * normalized with a softmax in F32. {@code out} has the shape of {@code q}.
     */
    default void attention(T q, T keys, T values, int[] positions, int headCount, int kvHeadCount, int headDim, T out) {
        attention(q, keys, values, positions, headCount, kvHeadCount, headDim, NO_WINDOW, out);
    }

    /**
     * {@link #attention(Object, Object, Object, int[], int, int, int, Object) Causal attention} within a sliding window:
     * row {@code r} attends only to cache rows {@code j} with {@code positions[r] - j < window}, that is rows
     * {@code [max(0, positions[r] - window + 1), positions[r]]}, the {@code window} latest positions, its own included.
     * This is Hugging Face's mask ({@code masking_utils.sliding_window_overlay}: {@code kv_idx > q_idx - sliding_window},
     * and-ed with the causal {@code kv_idx <= q_idx}), which Mistral and Qwen2 use for their sliding layers.
     * {@link #NO_WINDOW} attends to every earlier position.
     *
     * @param window the positions a query sees, its own included: at least 1, or {@link #NO_WINDOW}
     */
    void attention(T q, T keys, T values, int[] positions, int headCount, int kvHeadCount, int headDim, int window, T out);

    /**
     * {@link #attention(Object, Object, Object, int[], int, int, int, int, Object) Windowed causal attention} with the
     * score scale and soft cap given: each score is {@code s = scale · q·k}, then, when {@code softcap > 0},
     * {@code s = softcap · tanh(s / softcap)} (Gemma 2's {@code attn_logit_softcapping}, applied before the mask and the
     * softmax, as transformers' eager attention does), then the softmax. Gemma scales by
     * {@code 1/sqrt(query_pre_attn_scalar)} instead of {@code 1/sqrt(headDim)}. The default serves the plain scale
     * {@code 1/sqrt(headDim)} without a cap only.
     *
     * @param scale   the factor on every dot product, positive
     * @param softcap the cap, positive, or 0 for none
     * @throws UnsupportedOperationException for another scale or a cap on a backend without them
     */
    default void attention(T q, T keys, T values, int[] positions, int headCount, int kvHeadCount, int headDim, int window,
                           float scale, float softcap, T out) {
        if (softcap != 0f || scale != plainAttentionScale(headDim)) {
            throw new UnsupportedOperationException(getClass().getSimpleName()
                    + " has no attention with a score scale other than 1/sqrt(head_dim) or a soft cap (Gemma's query_pre_attn_scalar, "
                    + "attn_logit_softcapping)");
        }
        attention(q, keys, values, positions, headCount, kvHeadCount, headDim, window, out);
    }

    /** The score scale of plain attention over heads of {@code headDim} features: {@code 1/sqrt(headDim)} in F32. */
    static float plainAttentionScale(int headDim) {
        return (float) (1.0 / Math.sqrt(headDim));
    }

    /**
     * Multiplies every element of {@code x} by {@code factor}, in place (Gemma's embedding scale {@code sqrt(hidden)}).
     * The default serves factor 1 only.
     *
     * @throws UnsupportedOperationException for another factor on a backend without it
     */
    default void scale(T x, float factor) {
        if (factor != 1f) {
            throw new UnsupportedOperationException(getClass().getSimpleName() + " has no element-wise scale (Gemma's embedding scale)");
        }
    }

    /**
     * Soft-caps every element of {@code x} in place: {@code x = cap · tanh(x / cap)}, in F32 (Gemma 2's
     * {@code final_logit_softcapping} on the logits). The default has no implementation.
     *
     * @param cap the cap, positive
     * @throws UnsupportedOperationException on a backend without it
     */
    default void softcap(T x, float cap) {
        throw new UnsupportedOperationException(getClass().getSimpleName() + " has no soft-capping (Gemma's final_logit_softcapping)");
    }

    /**
     * The SwiGLU gate: {@code out = silu(gate) · up} element-wise, with {@code silu(x) = x / (1 + e^-x)};
     * {@code out} may be {@code gate} or {@code up}.
     */
    void siluMul(T gate, T up, T out);

    /**
     * The gated MLP's product {@code out = act(gate) · up} element-wise, in F32; {@code out} may be {@code gate} or
     * {@code up}. {@link GateActivation#SILU} is {@link #siluMul}.
     */
    void gatedMul(T gate, T up, T out, GateActivation activation);

    /** Element-wise sum {@code out = a + b} (a residual connection); {@code out} may be {@code a} or {@code b}. */
    void add(T a, T b, T out);

    /** Replaces every row of {@code x} by its softmax, computed in F32 with the row maximum subtracted. */
    void softmax(T x);

    /** The column of the largest value of every row (the first one on ties), readable on the host. */
    int[] argmax(T x);
}
