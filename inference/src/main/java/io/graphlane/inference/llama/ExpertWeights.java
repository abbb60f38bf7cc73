package io.graphlane.inference.llama;

import java.util.Objects;

/**
 * One expert of a mixture-of-experts layer: a gated MLP in the Hugging Face {@code Linear} layout, bound through the
 * materialization supervisor as one atomic unit (all three or none).
 *
 * @param gate {@code width × hidden} (Mixtral's {@code w1}, Qwen3-MoE's {@code gate_proj})
 * @param up   {@code width × hidden} (Mixtral's {@code w3}, Qwen3-MoE's {@code up_proj})
 * @param down {@code hidden × width} (Mixtral's {@code w2}, Qwen3-MoE's {@code down_proj})
 * @param <T>  the backend tensor
 */
public record ExpertWeights<T>(T gate, T up, T down) {
    /** Checks that every projection is present. */
    public ExpertWeights {
        Objects.requireNonNull(gate, "gate");
        Objects.requireNonNull(up, "up");
        Objects.requireNonNull(down, "down");
    }
}
