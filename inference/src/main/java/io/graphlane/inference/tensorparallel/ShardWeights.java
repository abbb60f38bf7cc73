package io.graphlane.inference.tensorparallel;

import io.graphlane.inference.llama.LayerWeights;
import io.graphlane.inference.stage.StageSpec;
import java.util.List;
import java.util.Objects;

/**
 * What one tensor-parallel rank of one stage holds: its shard of every layer (q/k/v and gate/up
 * rows, o and down columns, replicated norms and output bias), and on rank 0 only the embedding
 * (first stage) and the final norm and head (last stage).
 *
 * @param <T> the backend tensor
 */
public record ShardWeights<T>(StageSpec stage, int rank, T embedding, List<LayerWeights<T>> layers, T finalNorm, T lmHead) {

    /** Checks the layer count and that only rank 0 holds the embedding and the head. */
    public ShardWeights {
        Objects.requireNonNull(stage, "stage");
        layers = List.copyOf(layers);
        if (layers.size() != stage.layers().size()) {
            throw new IllegalArgumentException(stage + " rank " + rank + " needs " + stage.layers().size() + " layers, got " + layers.size());
        }
        boolean embeds = rank == 0 && stage.isFirst();
        boolean heads = rank == 0 && stage.isLast();
        if (embeds != (embedding != null) || heads != (finalNorm != null) || heads != (lmHead != null)) {
            throw new IllegalArgumentException(stage + " rank " + rank + ": only rank 0 holds the embedding (first stage) and the head (last stage)");
        }
    }
}
