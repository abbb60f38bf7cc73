package io.graphlane.inference.llama;

import java.util.List;

/**
 * What a stage step reads: the segments of a micro-batch, in row order, and either their token
 * ids (stage 0) or the activation the previous stage produced (one row per position).
 *
 * @param <T> the backend tensor
 */
public sealed interface StageInput<T> {

    /** The requests of this step, their rows concatenated in this order. */
    List<Segment> segments();

    /** Token ids for the first stage, one per position. */
    record Tokens<T>(List<Segment> segments, int[] tokenIds) implements StageInput<T> {
        /** Copies the segment list. */
        public Tokens {
            segments = List.copyOf(segments);
        }
    }

    /** The residual stream from the previous stage, {@code positions × hidden}; the stage reads and never frees it. */
    record Hidden<T>(List<Segment> segments, T activation) implements StageInput<T> {
        /** Copies the segment list. */
        public Hidden {
            segments = List.copyOf(segments);
        }
    }

    /** Total positions (rows) of this step. */
    default int positions() {
        int n = 0;
        for (Segment s : segments()) {
            n += s.length();
        }
        return n;
    }
}
