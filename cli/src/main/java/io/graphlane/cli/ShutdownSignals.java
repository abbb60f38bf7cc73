package io.graphlane.cli;

import java.util.concurrent.atomic.AtomicBoolean;

/**
 * SIGTERM and SIGINT as a request to stop gracefully: instead of the JVM's shutdown (whose exit status after a signal
 * is 128 + its number, and which runs every shutdown hook at once), the command's own stop runs once, on its own
 * thread, and the command returns its exit status normally.
 */
final class ShutdownSignals {
    private ShutdownSignals() {
    }

    /** Runs {@code stop} once on the first SIGTERM or SIGINT; false when this JVM cannot handle signals. */
    @SuppressWarnings("restriction")
    static boolean handle(Runnable stop) {
        AtomicBoolean started = new AtomicBoolean();
        sun.misc.SignalHandler handler = signal -> {
            if (started.compareAndSet(false, true)) {
                Thread t = new Thread(stop, "graphlane-drain");
                t.setDaemon(false);
                t.start();
            }
        };
        try {
            sun.misc.Signal.handle(new sun.misc.Signal("TERM"), handler);
            sun.misc.Signal.handle(new sun.misc.Signal("INT"), handler);
            return true;
        } catch (IllegalArgumentException | UnsupportedOperationException unavailable) {
            return false;
        }
    }
}
