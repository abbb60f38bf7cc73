package io.graphlane.core.backend;

import io.graphlane.core.completion.Completion;
import io.graphlane.core.completion.Completions;
import io.graphlane.core.completion.SettableCompletion;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * The executor bookkeeping that every {@link SubmissionBackend} shares, so that a backend states
 * only what is its own: how an executor is created ({@link #createExecutor}), how work is enqueued
 * and ordered on it ({@link #enqueue}, {@link #enqueueWait}), how it is closed
 * ({@link #closeExecutor}) and what the device releases once every executor has stopped
 * ({@link #stopDevice}).
 *
 * <p>Owns: the executors of one device, the root and every forked lane (named
 * {@code <device>/lane-N} from one counter), and the device's shutdown state and completion.
 *
 * <p>Guarantees: every call checks that its executor belongs to this backend before the subclass
 * sees it; {@code orderAfter} refuses a producer of another device before anything is queued;
 * {@code forkExecutors} and {@code shutdown} are serialized, so a forked executor is either made
 * before shutdown, and shut down with the others, or refused: no executor outlives shutdown;
 * shutting down twice returns the same completion.
 *
 * <p>Refuses: an executor of another backend ({@link IllegalArgumentException} naming both
 * devices), a negative fork count ({@link IllegalArgumentException} with the value), a fork after
 * shutdown ({@link ExecutorClosedException}). Refusing work on a closed executor is the executor's
 * own business, in {@link #enqueue} and {@link #enqueueWait}.
 *
 * @param <E> the backend-native executor
 * @param <C> the backend's exact completion
 * @param <W> one item of backend-native work
 */
public abstract class AbstractSubmissionBackend<E, C extends Completion, W> implements SubmissionBackend<E, C, W> {
    private final String deviceName;
    private final CopyOnWriteArrayList<E> executors = new CopyOnWriteArrayList<>();
    /** Serializes forking with shutdown, so that shutdown sees every executor ever forked. */
    private final Object lifecycle = new Object();
    private int laneCounter; // guarded by lifecycle
    private boolean shutdown; // guarded by lifecycle
    private SettableCompletion allStopped; // guarded by lifecycle
    private volatile E root;

    /** A backend for the device named {@code deviceName}; the subclass constructor ends with {@link #openRootExecutor()}. */
    protected AbstractSubmissionBackend(String deviceName) {
        this.deviceName = Objects.requireNonNull(deviceName, "deviceName");
    }

    // ---- what a backend says about itself ----

    /** Creates an executor named {@code name} ({@code <device>/<lane>}) on this device; never called after shutdown. */
    protected abstract E createExecutor(String name);

    /** The backend that created {@code executor}. */
    protected abstract SubmissionBackend<?, ?, ?> executorBackend(E executor);

    /** The name of {@code executor}, {@code <device>/<lane>}; used in errors. */
    protected abstract String executorName(E executor);

    /** The backend whose executor recorded {@code completion}. */
    protected abstract SubmissionBackend<?, ?, ?> completionBackend(C completion);

    /**
     * Enqueues {@code work} (not null) on {@code executor} (one of this backend's) as
     * {@link #submit(Object, List)} promises.
     *
     * @throws ExecutorClosedException if the executor is shut down
     */
    protected abstract C enqueue(E executor, List<? extends W> work);

    /**
     * Makes the next submission on {@code executor} (one of this backend's) wait on the device side
     * for {@code producer} (of this device), as {@link #orderAfter} promises.
     *
     * @throws ExecutorClosedException if the executor is shut down
     */
    protected abstract void enqueueWait(C producer, E executor);

    /**
     * Stops {@code executor} accepting work and returns the completion that ends when it has
     * drained and stopped; closing twice returns the same completion. Never waits.
     */
    protected abstract Completion closeExecutor(E executor);

    /**
     * Runs once after {@link #shutdown()}, when every executor has stopped: releases what the
     * device holds beyond its executors, then ends {@code done}. The default just succeeds it.
     *
     * @param executorsStopped the stopped completion of each executor, all ended
     */
    protected void stopDevice(List<Completion> executorsStopped, SettableCompletion done) {
        done.succeed();
    }

    /**
     * Refuses {@code operation} by throwing if the device cannot take new executors for a reason
     * of its own (a lost device, say); {@code forkExecutors} asks it before the shutdown check.
     * The default accepts.
     */
    protected void checkUsable(String operation) {
    }

    // ---- for the subclass ----

    /** Creates the root executor; the subclass constructor calls this once, last, when {@link #createExecutor} can run. */
    protected final void openRootExecutor() {
        synchronized (lifecycle) {
            if (root != null) {
                throw new IllegalStateException("the root executor of " + deviceName + " is already open");
            }
            root = register(createExecutor(deviceName + "/root"));
        }
    }

    /** Every executor this backend has created, the root first, in creation order; a live read-only view. */
    protected final List<E> executors() {
        return Collections.unmodifiableList(executors);
    }

    /**
     * Refuses an executor that this backend did not create.
     *
     * @throws IllegalArgumentException naming the executor, its device and this device
     */
    protected final void checkOwned(E executor, String operation) {
        Objects.requireNonNull(executor, "executor");
        SubmissionBackend<?, ?, ?> owner = executorBackend(executor);
        if (owner != this) {
            throw new IllegalArgumentException(operation + ": executor " + executorName(executor) + " belongs to device "
                    + owner.deviceName() + ", not to " + deviceName);
        }
    }

    // ---- SubmissionBackend ----

    @Override
    public final String deviceName() {
        return deviceName;
    }

    @Override
    public final E rootExecutor() {
        E r = root;
        if (r == null) {
            throw new IllegalStateException("backend " + deviceName + " has no root executor: its constructor must end with openRootExecutor()");
        }
        return r;
    }

    /** {@inheritDoc} Serialized with {@link #shutdown()}, so no executor is forked after shutdown has closed the others. */
    @Override
    public final List<E> forkExecutors(E executor, int count) {
        checkOwned(executor, "forkExecutors");
        if (count < 0) {
            throw new IllegalArgumentException("forkExecutors: count must be >= 0, got " + count);
        }
        synchronized (lifecycle) {
            checkUsable("forkExecutors");
            if (shutdown) {
                throw new ExecutorClosedException(deviceName, "forkExecutors");
            }
            List<E> forked = new ArrayList<>(count);
            for (int i = 0; i < count; i++) {
                forked.add(register(createExecutor(deviceName + "/lane-" + laneCounter++)));
            }
            return forked;
        }
    }

    @Override
    public final C submit(E executor, List<? extends W> work) {
        checkOwned(executor, "submit");
        Objects.requireNonNull(work, "work");
        return enqueue(executor, work);
    }

    @Override
    public final void orderAfter(C producer, E executor) {
        checkOwned(executor, "orderAfter");
        Objects.requireNonNull(producer, "producer");
        SubmissionBackend<?, ?, ?> producerDevice = completionBackend(producer);
        if (producerDevice != this) {
            throw new CrossDeviceOrderingException(producer.label(), producerDevice.deviceName(), executorName(executor), deviceName);
        }
        enqueueWait(producer, executor);
    }

    @Override
    public final Completion shutdownExecutor(E executor) {
        checkOwned(executor, "shutdownExecutor");
        return closeExecutor(executor);
    }

    /** {@inheritDoc} Serialized with {@link #forkExecutors}: every executor forked before this call is shut down by it. */
    @Override
    public final Completion shutdown() {
        synchronized (lifecycle) {
            if (allStopped != null) {
                return allStopped;
            }
            shutdown = true;
            SettableCompletion done = new SettableCompletion(deviceName + " (shut down)");
            allStopped = done;
            List<Completion> each = new ArrayList<>(executors.size());
            for (E e : executors) {
                each.add(closeExecutor(e));
            }
            Completions.whenAllDone(each, () -> stopDevice(each, done));
            return done;
        }
    }

    private E register(E executor) {
        executors.add(Objects.requireNonNull(executor, "createExecutor returned null"));
        return executor;
    }
}
