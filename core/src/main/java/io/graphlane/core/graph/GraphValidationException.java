package io.graphlane.core.graph;

import io.graphlane.core.GraphlaneException;
import java.util.List;

/** A lane graph that cannot run; lists every problem found, each naming the nodes and lanes involved. */
public final class GraphValidationException extends GraphlaneException {
    private static final long serialVersionUID = 1L;

    private final List<String> problems;

    public GraphValidationException(List<String> problems) {
        super("lane graph refused: " + String.join("; ", problems));
        this.problems = List.copyOf(problems);
    }

    public List<String> problems() {
        return problems;
    }
}
