package io.graphlane.inference.offload;

import io.graphlane.actors.lane.WorkTracing;
import io.graphlane.core.backend.SubmissionBackend;
import io.graphlane.core.completion.Completion;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.function.Function;

/**
 * A device's {@link SubmissionBackend} whose transfer lanes submit promotions: a work item registered here as a
 * promotion is not handed to the device as work; when its lane actor submits it, the promotion starts on that lane
 * (through the backend's {@code TransferBackend.promote}) and its exact completion is the submission's. Everything
 * else (other work, ordering, retention, executors) is the device's. So a promotion is planned, ordered, cancelled,
 * poisoned and traced like any work of a lane, and the compute lane orders after its completion handle.
 *
 * @param <E> the executor
 * @param <C> the completion
 * @param <W> backend-native work
 */
public final class TransferSubmissions<E, C extends Completion, W> implements SubmissionBackend<E, C, W> {
    private final SubmissionBackend<E, C, W> device;
    private final Map<W, Function<E, C>> promotions = Collections.synchronizedMap(new IdentityHashMap<>());

    /** Submissions to {@code device}, with the promotions registered here. */
    public TransferSubmissions(SubmissionBackend<E, C, W> device) {
        this.device = Objects.requireNonNull(device, "device");
    }

    /**
     * Registers {@code marker} (a work item made for this alone) as a promotion that {@code start} begins on the lane
     * it is submitted to, returning the promotion's completion. The returned registration forgets it: the promotion's
     * submission retains it, so a marker never submitted (cancelled, poisoned) is forgotten when the lane lets go of it.
     */
    public AutoCloseable register(W marker, Function<E, C> start) {
        Objects.requireNonNull(marker, "marker");
        Objects.requireNonNull(start, "start");
        if (promotions.putIfAbsent(marker, start) != null) {
            throw new IllegalArgumentException("work item " + marker + " is already registered as a promotion");
        }
        return () -> promotions.remove(marker);
    }

    /** How many promotions are registered and not yet submitted. */
    public int pendingPromotions() {
        return promotions.size();
    }

    /** {@code inner}, leaving promotions as they are (a promotion is recognised by its identity). */
    public WorkTracing<W> tracing(WorkTracing<W> inner) {
        return (work, started) -> promotions.containsKey(work) ? work : inner.instrument(work, started);
    }

    @Override
    public C submit(E executor, List<? extends W> work) {
        if (work.size() == 1) {
            Function<E, C> start = promotions.remove(work.get(0));
            if (start != null) {
                return start.apply(executor);
            }
        }
        return device.submit(executor, work);
    }

    @Override
    public String deviceName() {
        return device.deviceName();
    }

    @Override
    public E rootExecutor() {
        return device.rootExecutor();
    }

    @Override
    public List<E> forkExecutors(E executor, int count) {
        return device.forkExecutors(executor, count);
    }

    @Override
    public void orderAfter(C producer, E executor) {
        device.orderAfter(producer, executor);
    }

    @Override
    public void retainUntilComplete(E executor, C completion, Object value) {
        device.retainUntilComplete(executor, completion, value);
    }

    @Override
    public Completion shutdownExecutor(E executor) {
        return device.shutdownExecutor(executor);
    }

    @Override
    public Completion shutdown() {
        return device.shutdown();
    }

    /** Closes nothing: the device belongs to whoever opened it. */
    @Override
    public void close() {
    }
}
