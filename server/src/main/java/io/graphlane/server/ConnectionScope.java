package io.graphlane.server;

import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import org.apache.pekko.http.javadsl.model.AttributeKey;

/**
 * What runs on one HTTP connection: the cancels of the non-streamed requests it is waiting for, run when the
 * connection ends (the client went away) before their responses were sent. Thread-safe.
 */
final class ConnectionScope {
    /** The request attribute through which a route finds its connection. */
    static final AttributeKey<ConnectionScope> KEY = AttributeKey.create("graphlane-connection", ConnectionScope.class);

    private final Set<Runnable> pending = new LinkedHashSet<>();
    private boolean closed;

    /** Runs {@code cancel} if the connection ends before the returned registration is closed (at once if it already ended). */
    Registration onClose(Runnable cancel) {
        boolean run;
        synchronized (this) {
            run = closed;
            if (!run) {
                pending.add(cancel);
            }
        }
        if (run) {
            cancel.run();
        }
        return () -> {
            synchronized (this) {
                pending.remove(cancel);
            }
        };
    }

    /** The connection ended: cancels what is still pending on it. */
    void close() {
        List<Runnable> toRun;
        synchronized (this) {
            closed = true;
            toRun = new ArrayList<>(pending);
            pending.clear();
        }
        toRun.forEach(Runnable::run);
    }

    /** A pending request's registration: closed once its response is on its way. */
    interface Registration {
        void close();
    }
}
