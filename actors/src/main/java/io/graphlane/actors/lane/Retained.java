package io.graphlane.actors.lane;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** Releases a value a lane held for work: closes it if it is {@link AutoCloseable}; a failing close is logged, never thrown. */
final class Retained {
    private static final Logger LOG = LoggerFactory.getLogger(Retained.class);

    private Retained() {
    }

    /** Releases {@code value}; the lane calls this exactly once per retained value. */
    static void release(Object value) {
        if (value instanceof AutoCloseable closeable) {
            try {
                closeable.close();
            } catch (Exception e) {
                LOG.warn("closing a retained value {} failed", value, e);
            }
        }
    }
}
