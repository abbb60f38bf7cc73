package io.graphlane.inference.tensorparallel;

import io.graphlane.core.GraphlaneException;
import io.graphlane.core.topology.Range;
import io.graphlane.inference.llama.LlamaConfig;

/**
 * How a Llama-family model splits over {@code size} tensor-parallel ranks: rank r holds query heads,
 * key/value heads and MLP intermediate columns of its contiguous range (the balanced ranges of the
 * topology, here all equal because the sizes must divide evenly).
 *
 * @param config the model
 * @param size   the tensor-parallel degree T
 */
public record TensorParallelism(LlamaConfig config, int size) {

    /**
     * Checks that {@code size} divides the heads, the key/value heads and the intermediate width.
     *
     * @throws GraphlaneException naming the option, the config field, the tensors it splits and both values otherwise
     */
    public TensorParallelism {
        if (size < 1) {
            throw new GraphlaneException("--tensor-parallel must be >= 1, got " + size);
        }
        if (size > 1 && config.moe() != null) {
            throw new GraphlaneException("--tensor-parallel " + size + ": a mixture-of-experts model (" + config.moe()
                    + ") is split by --expert-parallel, not by tensor parallelism");
        }
        requireDivides(size, config.headCount(), "num_attention_heads", "the heads of self_attn.q_proj.weight and self_attn.o_proj.weight");
        requireDivides(size, config.kvHeadCount(), "num_key_value_heads", "the heads of self_attn.k_proj.weight and self_attn.v_proj.weight");
        requireDivides(size, config.intermediateSize(), "intermediate_size",
                "the rows of mlp.gate_proj.weight and mlp.up_proj.weight, the columns of mlp.down_proj.weight");
    }

    /** Query heads per rank. */
    public int headsPerRank() {
        return config.headCount() / size;
    }

    /** Key/value heads per rank. */
    public int kvHeadsPerRank() {
        return config.kvHeadCount() / size;
    }

    /** Rows of q_proj (and columns of o_proj) rank {@code rank} owns. */
    public Range queryFeatures(int rank) {
        int w = headsPerRank() * config.headDim();
        return new Range(rank * w, (rank + 1) * w);
    }

    /** Rows of k_proj and v_proj rank {@code rank} owns. */
    public Range kvFeatures(int rank) {
        int w = kvHeadsPerRank() * config.headDim();
        return new Range(rank * w, (rank + 1) * w);
    }

    /** Rows of gate_proj and up_proj (and columns of down_proj) rank {@code rank} owns. */
    public Range intermediateFeatures(int rank) {
        int w = config.intermediateSize() / size;
        return new Range(rank * w, (rank + 1) * w);
    }

    private static void requireDivides(int size, int value, String field, String split) {
        if (value % size != 0) {
            throw new GraphlaneException("--tensor-parallel " + size + " does not divide " + field + " = " + value
                    + " of the model (" + split + " split over the ranks): each rank must hold whole heads and equal shares; "
                    + "choose a divisor of " + value);
        }
    }
}
