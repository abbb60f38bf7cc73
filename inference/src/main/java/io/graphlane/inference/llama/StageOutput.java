package io.graphlane.inference.llama;

import java.util.List;

/**
 * What a stage step produces, owned by the caller (release it with the stage's ops once read).
 *
 * @param <T> the backend tensor
 */
public sealed interface StageOutput<T> {

    /** The requests of this step, in row order. */
    List<Segment> segments();

    /** The residual stream for the next stage, {@code positions × hidden}. */
    record Hidden<T>(List<Segment> segments, T activation) implements StageOutput<T> {
    }

    /** The last stage's logits at each segment's last position, {@code segments × vocab}. */
    record Logits<T>(List<Segment> segments, T logits) implements StageOutput<T> {
    }

    /** The tensor this output carries. */
    default T tensor() {
        return this instanceof Hidden<T> h ? h.activation() : ((Logits<T>) this).logits();
    }
}
