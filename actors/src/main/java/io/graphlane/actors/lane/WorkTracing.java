package io.graphlane.actors.lane;

import java.util.function.LongConsumer;

/**
 * How a lane learns when backend-native work actually starts on its executor, for the trace.
 * A backend integration wraps work so that {@code started} is called with {@link System#nanoTime()}
 * just before the work runs (on the device timeline). Used only while a trace is recorded.
 *
 * @param <W> backend-native work
 */
@FunctionalInterface
public interface WorkTracing<W> {

    /** Work that calls {@code started} with the start time and then does what {@code work} does. */
    W instrument(W work, LongConsumer started);

    /** No instrumentation: traced work is shown starting when it was submitted. */
    static <W> WorkTracing<W> none() {
        return (work, started) -> work;
    }
}
