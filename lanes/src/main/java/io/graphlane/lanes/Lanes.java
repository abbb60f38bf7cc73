package io.graphlane.lanes;

import io.graphlane.actors.lane.LaneGroup;
import io.graphlane.backend.cpu.CpuBackend;
import io.graphlane.backend.cpu.CpuCompletion;
import io.graphlane.backend.cpu.CpuExecutor;
import io.graphlane.backend.cpu.CpuWork;
import io.graphlane.scheduler.graph.GraphRunner;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.javadsl.Behaviors;

/**
 * The lane runtime in one object: an actor system, a CPU backend and its lanes (one worker thread each, each owned by
 * one lane actor), closed together by {@link #close()}.
 *
 * <pre>{@code
 * try (Lanes lanes = Lanes.cpu("load", "compute")) {
 *     Results out = lanes.flow()
 *             .node("read", "load", in -> 21)
 *             .node("double", "compute", in -> in.<Integer>get("read") * 2, "read")
 *             .run();
 *     int answer = out.get("double"); // 42
 * }
 * }</pre>
 *
 * <p><b>Ordering.</b> A node runs after every node it names in {@code after}: its lane submits it ordered after their
 * completion handles (on another lane, without blocking a thread), and a node whose producer failed is not run.
 *
 * <p><b>Memory visibility.</b> Everything a node's work did before it returned <em>happens-before</em> everything the
 * work of a node that runs after it does, directly or through other nodes, on whichever lane: a producer may fill a
 * plain array or set plain fields and its consumers read them without locks or volatile fields. The guarantee travels
 * through the completion handle: the producer's worker publishes its completion (a volatile write, after the work
 * returned), and the consumer's work starts only after that completion was read, on the consumer's lane through the
 * lane actor's message and the worker's queue, or by the worker's wait on the completion itself. Nodes that are not
 * ordered (neither runs after the other) get no such guarantee and must synchronize shared state themselves.
 *
 * <p><b>Closing.</b> {@link #close()} stops the lanes (work already running finishes; work not yet started is dropped
 * and its retained values released), shuts the backend's workers and terminates the actor system when the runtime
 * created it, waiting at most {@link Builder#closeTimeout} for each.
 *
 * <p>This is a layer over {@link LaneGroup}, {@link GraphRunner} and {@link CpuBackend}, which {@link #group()} and
 * {@link #runner()} expose for what it does not cover.
 */
public final class Lanes implements AutoCloseable {
    private final ActorSystem<?> system;
    private final boolean ownsSystem;
    private final CpuBackend backend;
    private final LaneGroup<CpuExecutor, CpuCompletion, CpuWork> group;
    private final GraphRunner<CpuWork> runner;
    private final List<String> names;
    private final Duration closeTimeout;
    private boolean closed;

    private Lanes(Builder b) {
        this.names = List.copyOf(b.names);
        this.closeTimeout = b.closeTimeout;
        this.ownsSystem = b.system == null;
        this.system = ownsSystem ? ActorSystem.create(Behaviors.empty(), b.systemName) : b.system;
        CpuBackend created = null;
        try {
            created = new CpuBackend();
            this.backend = created;
            this.group = LaneGroup.builder(system, created).lanes(names.toArray(String[]::new)).spawn();
            this.runner = new GraphRunner<>(group);
        } catch (RuntimeException e) {
            if (created != null) {
                created.close();
            }
            if (ownsSystem) {
                system.terminate();
            }
            throw e;
        }
    }

    /** A runtime of {@code count} CPU lanes named {@code lane-0} to {@code lane-<count-1>}. */
    public static Lanes cpu(int count) {
        if (count < 1) {
            throw new IllegalArgumentException("a lane runtime needs at least one lane, got " + count);
        }
        List<String> names = new ArrayList<>(count);
        for (int i = 0; i < count; i++) {
            names.add("lane-" + i);
        }
        return builder().lanes(names.toArray(String[]::new)).build();
    }

    /** A runtime of one CPU lane per name, in order. */
    public static Lanes cpu(String... names) {
        return builder().lanes(names).build();
    }

    /** Starts describing a runtime. */
    public static Builder builder() {
        return new Builder();
    }

    /** A new lane graph over this runtime's lanes. */
    public LaneFlow flow() {
        checkOpen();
        return new LaneFlow(this);
    }

    /** The lanes' names, in declaration order. */
    public List<String> laneNames() {
        return names;
    }

    /** The lane actors underneath. */
    public LaneGroup<CpuExecutor, CpuCompletion, CpuWork> group() {
        return group;
    }

    /** The graph runner underneath, for raw {@link io.graphlane.core.graph.LaneGraph}s of {@link CpuWork}. */
    public GraphRunner<CpuWork> runner() {
        checkOpen();
        return runner;
    }

    /** The actor system the lanes run in. */
    public ActorSystem<?> system() {
        return system;
    }

    /**
     * Stops the lanes, closes the backend and terminates the actor system if this runtime created it; idempotent.
     *
     * @throws IllegalStateException if the lanes or the actor system did not stop within the close timeout (the rest
     *     is closed anyway)
     */
    @Override
    public synchronized void close() {
        if (closed) {
            return;
        }
        closed = true;
        List<String> problems = new ArrayList<>();
        try {
            group.stop().toCompletableFuture().get(closeTimeout.toMillis(), TimeUnit.MILLISECONDS);
        } catch (TimeoutException e) {
            problems.add("the lanes " + names + " did not stop within " + closeTimeout);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            problems.add("interrupted while the lanes stopped");
        } catch (Exception e) {
            problems.add("stopping the lanes failed: " + e);
        }
        try {
            backend.shutdown().toStage().toCompletableFuture().get(closeTimeout.toMillis(), TimeUnit.MILLISECONDS);
        } catch (TimeoutException e) {
            problems.add("the CPU workers did not stop within " + closeTimeout + " (a work still running?)");
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            problems.add("interrupted while the CPU workers stopped");
        } catch (Exception e) {
            problems.add("stopping the CPU workers failed: " + e);
        }
        if (ownsSystem) {
            system.terminate();
            try {
                system.getWhenTerminated().toCompletableFuture().get(closeTimeout.toMillis(), TimeUnit.MILLISECONDS);
            } catch (TimeoutException e) {
                problems.add("the actor system '" + system.name() + "' did not terminate within " + closeTimeout);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                problems.add("interrupted while the actor system terminated");
            } catch (Exception e) {
                problems.add("terminating the actor system failed: " + e);
            }
        }
        if (!problems.isEmpty()) {
            throw new IllegalStateException("closing the lane runtime: " + String.join("; ", problems));
        }
    }

    private synchronized void checkOpen() {
        if (closed) {
            throw new IllegalStateException("this lane runtime is closed");
        }
    }

    /** What {@link #build()} needs: lane names, and optionally an actor system of the caller's. */
    public static final class Builder {
        private final LinkedHashSet<String> names = new LinkedHashSet<>();
        private ActorSystem<?> system;
        private String systemName = "graphlane-lanes";
        private Duration closeTimeout = Duration.ofSeconds(30);

        private Builder() {
        }

        /** Adds one CPU lane per name, in order. */
        public Builder lanes(String... laneNames) {
            for (String n : laneNames) {
                Objects.requireNonNull(n, "lane name");
                if (n.isBlank()) {
                    throw new IllegalArgumentException("a lane name must not be blank");
                }
                if (!names.add(n)) {
                    throw new IllegalArgumentException("lane '" + n + "' is declared twice");
                }
            }
            return this;
        }

        /** Runs the lanes in {@code actorSystem}, which {@link Lanes#close()} then leaves running. */
        public Builder actorSystem(ActorSystem<?> actorSystem) {
            this.system = Objects.requireNonNull(actorSystem, "actorSystem");
            return this;
        }

        /** The name of the actor system the runtime creates (when it is not given one); {@code graphlane-lanes} by default. */
        public Builder systemName(String name) {
            this.systemName = Objects.requireNonNull(name, "name");
            return this;
        }

        /** How long {@link Lanes#close()} waits for the lanes, then for the actor system; 30 s by default. */
        public Builder closeTimeout(Duration timeout) {
            if (timeout.isNegative() || timeout.isZero()) {
                throw new IllegalArgumentException("the close timeout must be positive, got " + timeout);
            }
            this.closeTimeout = timeout;
            return this;
        }

        /** Creates the actor system (unless given one), the backend and the lanes. */
        public Lanes build() {
            if (names.isEmpty()) {
                throw new IllegalArgumentException("a lane runtime needs at least one lane: name them with lanes(...)");
            }
            return new Lanes(this);
        }
    }
}
