package io.graphlane.backend.cpu.collective;

import java.time.Duration;
import java.util.Objects;

/**
 * How a group waits and streams.
 *
 * @param memberTimeout how long a member waits for another member's next message before it fails
 *                      the collective naming that member (the descriptor, or the next payload chunk)
 * @param chunkFloats   the largest payload message, in floats: a large tensor streams as many chunks
 */
public record CollectiveSettings(Duration memberTimeout, int chunkFloats) {
    /** The default member timeout. */
    public static final Duration DEFAULT_TIMEOUT = Duration.ofSeconds(30);
    /** The default chunk, 64 Ki floats (256 KiB). */
    public static final int DEFAULT_CHUNK_FLOATS = 1 << 16;

    /** Checks both are positive. */
    public CollectiveSettings {
        Objects.requireNonNull(memberTimeout, "memberTimeout");
        if (memberTimeout.isNegative() || memberTimeout.isZero()) {
            throw new IllegalArgumentException("collective member timeout must be positive, got " + memberTimeout);
        }
        if (chunkFloats < 1) {
            throw new IllegalArgumentException("collective chunk must be at least 1 float, got " + chunkFloats);
        }
    }

    /** A 30 s member timeout and 64 Ki-float chunks. */
    public static CollectiveSettings defaults() {
        return new CollectiveSettings(DEFAULT_TIMEOUT, DEFAULT_CHUNK_FLOATS);
    }

    /** These settings with another member timeout. */
    public CollectiveSettings withMemberTimeout(Duration timeout) {
        return new CollectiveSettings(timeout, chunkFloats);
    }
}
