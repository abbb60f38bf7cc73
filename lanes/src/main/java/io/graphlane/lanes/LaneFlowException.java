package io.graphlane.lanes;

import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * A {@link LaneFlow} run in which some node did not commit. The message names every such node and its lane, and for a
 * node that did not run because a node it runs after failed, that node and its lane; {@link #getCause()} is the first
 * failure in the graph's order (a {@link NodeFailedException} when a work threw).
 */
public final class LaneFlowException extends RuntimeException {
    private final Map<String, String> reasons;

    LaneFlowException(Map<String, String> reasons, Throwable cause) {
        super(message(reasons), cause);
        this.reasons = Collections.unmodifiableMap(new LinkedHashMap<>(reasons));
    }

    /** For each node that did not commit, in the graph's order: why, naming it and its lane. */
    public Map<String, String> reasons() {
        return reasons;
    }

    private static String message(Map<String, String> reasons) {
        return "lane graph failed: " + String.join("; ", reasons.values());
    }
}
