package io.graphlane.core.trace;

import java.util.List;

/**
 * Where lanes record their events. Implementations are thread-safe and never block the
 * recording thread. Callers check {@link #enabled()} before building an event, so a disabled
 * recorder costs nothing beyond that check.
 */
public interface TraceRecorder {

    /** A recorder that records nothing; {@link #enabled()} is false. */
    TraceRecorder DISABLED = new TraceRecorder() {
        @Override
        public boolean enabled() {
            return false;
        }

        @Override
        public void record(TraceEvent event) {
        }

        @Override
        public List<TraceEvent> events() {
            return List.of();
        }
    };

    /** Whether events are kept; when false, recording sites skip building events altogether. */
    boolean enabled();

    /** Keeps {@code event} if there is room; never blocks. */
    void record(TraceEvent event);

    /** The events kept so far, in the order they were recorded. */
    List<TraceEvent> events();
}
