package io.graphlane.inference.llama;

import io.graphlane.checkpoint.config.MoeConfig;
import io.graphlane.core.nn.NeuralOps;
import java.util.Objects;

/**
 * The sparse mixture-of-experts block of a decoder layer (Mixtral, Qwen3-MoE), in place of the dense MLP: the router
 * ({@link MoeRouting}), then each expert's gated MLP over the rows that chose it, then the routing-weighted sum per row.
 * The rows of every request in a step are grouped per expert, so each expert runs one GEMM per projection per step
 * however many requests the step batches. The sum is accumulated expert by expert in index order, as transformers'
 * {@code index_add_} loop does.
 *
 * <p>Where the experts run is the {@link ExpertRunner}'s business: {@link #local} runs them here, on the caller's
 * thread; expert parallelism ({@code io.graphlane.inference.moe}) sends each expert's rows to the lane that holds it.
 *
 * @param <T> the backend tensor
 */
public final class MoeBlock<T> {

    /** Runs the experts of one layer over the rows routed to them. */
    public interface ExpertRunner<T> {
        /**
         * Adds to {@code out} ({@code rows × hidden}, row-major, host) each row's routing-weighted sum of its experts'
         * outputs, for the rows of {@code normed} ({@code rows × hidden}, host) as {@code routing} sends them, in layer
         * {@code weights} (whose {@link MoeWeights#layer} is the model's index of the layer).
         */
        void run(MoeWeights<T> weights, float[] normed, MoeRouting routing, float[] out);
    }

    private final NeuralOps<T> ops;
    private final LlamaConfig config;
    private final MoeConfig moe;
    private final ExpertRunner<T> runner;

    /** A block of {@code config}'s sparse layers whose experts run through {@code runner}. */
    public MoeBlock(NeuralOps<T> ops, LlamaConfig config, ExpertRunner<T> runner) {
        this.ops = Objects.requireNonNull(ops, "ops");
        this.config = Objects.requireNonNull(config, "config");
        this.moe = Objects.requireNonNull(config.moe(), "config.moe");
        this.runner = Objects.requireNonNull(runner, "runner");
    }

    /** A block that runs every expert on the caller's thread with {@code ops}. */
    public static <T> MoeBlock<T> local(NeuralOps<T> ops, LlamaConfig config) {
        return new MoeBlock<>(ops, config, new LocalExperts<>(ops, config));
    }

    /** The routing of {@code normed}'s rows by {@code router} ({@code experts × hidden}). */
    public MoeRouting route(T router, T normed) {
        int rows = ops.rows(normed);
        T logits = ops.allocate(rows, moe.expertCount());
        try {
            ops.linear(normed, router, logits);
            float[] host = new float[rows * moe.expertCount()];
            ops.toHost(logits, host);
            return MoeRouting.route(host, rows, moe.expertCount(), moe.expertsPerToken(), moe.renormalize());
        } finally {
            ops.release(logits);
        }
    }

    /** The sparse block of {@code weights}' layer from the normed input {@code normed} into {@code out}. */
    public void forward(MoeWeights<T> weights, T normed, T out) {
        int rows = ops.rows(normed);
        int hidden = config.hiddenSize();
        MoeRouting routing = route(weights.router(), normed);
        float[] in = new float[rows * hidden];
        ops.toHost(normed, in);
        float[] sum = new float[rows * hidden];
        runner.run(weights, in, routing, sum);
        T result = ops.fromHost(sum, rows, hidden);
        try {
            ops.copy(result, out);
        } finally {
            ops.release(result);
        }
    }

    /**
     * One expert's gated MLP over {@code rows} rows of {@code input} (host, {@code rows × hidden}): returns its
     * {@code rows × hidden} output on the host. Every projection is one GEMM over all the rows.
     */
    public static <T> float[] runExpert(NeuralOps<T> ops, LlamaConfig config, ExpertWeights<T> expert, float[] input, int rows) {
        int hidden = config.hiddenSize();
        int width = config.moe().expertIntermediateSize();
        T x = ops.fromHost(input, rows, hidden);
        T gate = ops.allocate(rows, width);
        T up = ops.allocate(rows, width);
        T down = ops.allocate(rows, hidden);
        try {
            ops.linear(x, expert.gate(), gate);
            ops.linear(x, expert.up(), up);
            ops.gatedMul(gate, up, gate, config.activation());
            ops.linear(gate, expert.down(), down);
            float[] out = new float[rows * hidden];
            ops.toHost(down, out);
            return out;
        } finally {
            ops.release(x);
            ops.release(gate);
            ops.release(up);
            ops.release(down);
        }
    }

    /** Gathers {@code rowIds}' rows of {@code all} ({@code hidden} wide) into a new array. */
    public static float[] gather(float[] all, int[] rowIds, int hidden) {
        float[] out = new float[rowIds.length * hidden];
        for (int i = 0; i < rowIds.length; i++) {
            System.arraycopy(all, rowIds[i] * hidden, out, i * hidden, hidden);
        }
        return out;
    }

    /** Adds {@code weight[i] × outputs[i]} to row {@code rowIds[i]} of {@code sum}, for each {@code i}. */
    public static void accumulate(float[] sum, float[] outputs, int[] rowIds, float[] weight, int hidden) {
        for (int i = 0; i < rowIds.length; i++) {
            int to = rowIds[i] * hidden;
            int from = i * hidden;
            float w = weight[i];
            for (int c = 0; c < hidden; c++) {
                sum[to + c] += w * outputs[from + c];
            }
        }
    }

    /** Every expert on the caller's thread, in index order. */
    private record LocalExperts<T>(NeuralOps<T> ops, LlamaConfig config) implements ExpertRunner<T> {
        @Override
        public void run(MoeWeights<T> weights, float[] normed, MoeRouting routing, float[] out) {
            int hidden = config.hiddenSize();
            int[] slots = new int[routing.experts().length];
            for (int e = 0; e < weights.expertCount(); e++) {
                int[] rowIds = routing.rowsOf(e, slots);
                if (rowIds.length == 0) {
                    continue;
                }
                ExpertWeights<T> expert = weights.experts().get(e);
                if (expert == null) {
                    throw new IllegalStateException("layer " + weights.layer() + ": expert " + e + " is not held here");
                }
                float[] w = new float[rowIds.length];
                for (int i = 0; i < rowIds.length; i++) {
                    w[i] = routing.weights()[slots[i]];
                }
                float[] y = runExpert(ops, config, expert, gather(normed, rowIds, hidden), rowIds.length);
                accumulate(out, y, rowIds, w, hidden);
            }
        }
    }
}
