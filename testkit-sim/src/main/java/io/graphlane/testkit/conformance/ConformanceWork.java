package io.graphlane.testkit.conformance;

import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;

/**
 * The work a backend's conformance test makes for {@link SubmissionConformanceSuite}: four kinds
 * that every backend can build from its own native work, so the same laws run on the CPU, the
 * simulated device and a GPU. Each value may be submitted more than once.
 *
 * @param <W> the backend's native work item
 */
public interface ConformanceWork<W> {

    /** Work that does nothing and succeeds. */
    W noop();

    /**
     * Work whose submission fails with {@code cause}: the recorded failure is {@code cause} itself or
     * a backend error that has {@code cause} in its chain.
     */
    W failing(RuntimeException cause);

    /**
     * Work that runs {@code onReached} on the host when its lane reaches it, in lane order, and then
     * succeeds (on a GPU: a host function launched on the stream). The action is short and never blocks.
     */
    W marker(Runnable onReached);

    /**
     * A gate: work that, once reached, keeps its lane busy until the test opens the gate (on a CPU a
     * latch the worker waits on; on a GPU a host-written flag the stream waits on, blocking no other stream).
     */
    Gate<W> gate(String name);

    /**
     * Whether a completion is seen done ({@code isDone}) by the time work ordered after it starts. True (the default)
     * where the lane settles each item before it takes the next (a CPU worker, the simulated device). False where the
     * device runs ahead and a host thread settles completions after the device passed them (a GPU's events, polled):
     * a marker there can run while the completion of the work in front of it is still pending on the host, and the
     * suite checks the order on the device instead (markers in lane order, none before the gate in front opened).
     */
    default boolean settlesBeforeSuccessorsStart() {
        return true;
    }

    /** An action a lane runs on its own host thread; a thrown exception fails the work. */
    @FunctionalInterface
    interface HostAction {
        /** Runs the action. */
        void run() throws Exception;
    }

    /**
     * The four kinds for a backend whose work runs on its lane's own host thread (a CPU worker): each is a
     * {@link HostAction} made native by {@code adapt}, and a gate is a latch the lane thread waits on, for two
     * minutes at most, so a test that never opens it fails instead of hanging.
     *
     * @param noop the backend's work that does nothing
     * @param adapt turns an action into the backend's work
     */
    static <W> ConformanceWork<W> onHostThread(W noop, Function<HostAction, W> adapt) {
        return new ConformanceWork<>() {
            @Override
            public W noop() {
                return noop;
            }

            @Override
            public W failing(RuntimeException cause) {
                return adapt.apply(() -> {
                    throw cause;
                });
            }

            @Override
            public W marker(Runnable onReached) {
                return adapt.apply(onReached::run);
            }

            @Override
            public Gate<W> gate(String name) {
                CountDownLatch open = new CountDownLatch(1);
                W wait = adapt.apply(() -> {
                    if (!open.await(2, TimeUnit.MINUTES)) {
                        throw new IllegalStateException("gate '" + name + "' was never opened");
                    }
                });
                return Gate.of(wait, open::countDown);
            }
        };
    }

    /**
     * A gate made by {@link ConformanceWork#gate}.
     *
     * @param <W> the backend's native work item
     */
    interface Gate<W> {

        /** The work that waits for this gate; it succeeds once the gate is open. */
        W work();

        /** Opens the gate; work waiting on it (now or later) goes on. Opening twice is harmless. */
        void open();

        /** A gate from its work and the action that opens it. */
        static <W> Gate<W> of(W work, Runnable open) {
            return new Gate<>() {
                @Override
                public W work() {
                    return work;
                }

                @Override
                public void open() {
                    open.run();
                }
            };
        }
    }
}
