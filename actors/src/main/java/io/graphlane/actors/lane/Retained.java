package io.graphlane.actors.lane;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Releases a value held for work: closes it if it is {@link AutoCloseable}; a failing close is
 * logged, never thrown. Lanes release what they retained; a graph runner releases the values of
 * nodes it never sent to a lane.
 */
public final class Retained {
    private static final Logger LOG = LoggerFactory.getLogger(Retained.class);

    private Retained() {
    }

    /** Releases {@code value}; whoever holds it calls this exactly once per retained value. */
    public static void release(Object value) {
        if (value instanceof AutoCloseable closeable) {
            try {
                closeable.close();
            } catch (Exception e) {
                LOG.warn("closing a retained value {} failed", value, e);
            }
        }
    }
}
