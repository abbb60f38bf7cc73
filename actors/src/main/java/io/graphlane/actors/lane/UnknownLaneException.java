package io.graphlane.actors.lane;

import io.graphlane.core.GraphlaneException;
import io.graphlane.core.graph.LaneId;
import java.util.Collection;
import java.util.stream.Collectors;

/** A lane id that no lane actor in the registry owns. */
public final class UnknownLaneException extends GraphlaneException {
    private static final long serialVersionUID = 1L;

    public UnknownLaneException(LaneId lane, Collection<LaneId> known) {
        super("unknown lane '" + lane + "': the registry holds " + (known.isEmpty() ? "no lanes"
                : "lanes " + known.stream().map(LaneId::name).sorted().collect(Collectors.joining(", "))));
    }
}
