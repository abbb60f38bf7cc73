package io.graphlane.core.backend;

import io.graphlane.core.completion.Completion;
import java.util.List;

/**
 * Submits backend-native work on executors (lanes) and retains values through the exact
 * completion of the work that uses them. The laws are those of {@code CONTRACTS.md}
 * (SubmissionBackend); the backend conformance suite in {@code graphlane-testkit} checks them.
 *
 * <p>Calls on one executor are made by one caller at a time (its lane actor); calls on
 * different executors may run concurrently.
 *
 * @param <E> the backend-native executor (a CUDA stream, a CPU worker queue)
 * @param <C> the backend's exact completion
 * @param <W> one item of backend-native work
 */
public interface SubmissionBackend<E, C extends Completion, W> extends AutoCloseable {

    /** A name for the device this backend drives, such as {@code cpu0}; used in errors and traces. */
    String deviceName();

    /** The executor the backend starts with; every lane is forked from it. */
    E rootExecutor();

    /** Creates {@code count} independently schedulable executors on the same device as {@code executor}. */
    List<E> forkExecutors(E executor, int count);

    /**
     * Enqueues {@code work} on {@code executor}, in order after everything submitted there before,
     * and returns the exact completion of exactly this work. Never waits for the work. An empty
     * list returns an already successful completion.
     *
     * @throws ExecutorClosedException if the executor or the backend is shut down
     */
    C submit(E executor, List<? extends W> work);

    /** Submits one work item; see {@link #submit(Object, List)}. */
    default C submit(E executor, W work) {
        return submit(executor, List.of(work));
    }

    /**
     * Orders all work submitted to {@code executor} after this call to start only after
     * {@code producer} has completed. Enforced on the device side: never blocks the caller. If
     * the producer fails, the next submission on {@code executor} does not run and completes
     * failed with a {@link io.graphlane.core.completion.PoisonedPreconditionException} naming it.
     *
     * @throws CrossDeviceOrderingException before anything is queued, if producer and executor are on different devices
     * @throws ExecutorClosedException if the executor is shut down
     */
    void orderAfter(C producer, E executor);

    /**
     * Keeps {@code value} reachable until {@code completion} has completed, then releases it exactly
     * once (closing it if it is {@link AutoCloseable}), whether the work succeeded or failed. A value
     * whose completion can never be proven is leaked on purpose and reported, never freed early.
     */
    void retainUntilComplete(E executor, C completion, Object value);

    /**
     * Stops accepting work on {@code executor} (later calls fail with {@link ExecutorClosedException}),
     * lets the work already submitted finish, then releases the executor. Returns at once; the
     * completion ends when the executor has stopped. Closing twice returns the same completion.
     */
    Completion shutdownExecutor(E executor);

    /**
     * Shuts every executor of this backend down as {@link #shutdownExecutor} does; returns at once.
     * Later forks are refused with {@link ExecutorClosedException}; a fork racing this call is either
     * refused or its executors are shut down with the others: no executor outlives shutdown.
     */
    Completion shutdown();

    /** Shuts down and waits until every executor has stopped. */
    @Override
    default void close() {
        Completion stopped = shutdown();
        try {
            stopped.await();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
