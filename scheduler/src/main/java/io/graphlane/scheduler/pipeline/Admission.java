package io.graphlane.scheduler.pipeline;

/**
 * What one engine holds against its bounds: requests running (each with an active slot and its KV-cache reservation),
 * requests queued for room, and the bytes of the KV budget reserved. Shared by the {@link Pipeline} (its callers'
 * threads decide at once whether a request starts, waits or is refused) and its {@link PipelineEngine} (its own
 * thread starts queued requests, ends requests and releases reservations). Every method is a few field updates under
 * the instance's lock, never a wait.
 *
 * <p>Guarantees: at most {@code maxActive} requests run and at most {@code maxQueued} wait; the reservations held never
 * exceed the budget; a request starts from submission only when none waits before it, so waiting requests start in
 * their order. An active slot frees when its request ends; its reservation only when the engine
 * {@link #release releases} it, once the request's KV caches are freed.
 */
final class Admission {

    /** Where a request admitted at submission goes. */
    enum Decision {
        /** It holds an active slot and its reservation: it runs at once. */
        START,
        /** It waits in the engine's queue until a slot and its reservation are free. */
        QUEUE
    }

    private final int maxActive;
    private final int maxQueued;
    private final KvBudget budget;
    private int active;
    private int queued;
    private long reserved;
    /** Bytes ever reserved and ever given back: equal once every reservation was released, exactly once. */
    private long reservedTotal;
    private long releasedTotal;

    Admission(PipelineSettings settings, KvBudget budget) {
        this.maxActive = settings.maxActiveRequests();
        this.maxQueued = settings.maxQueuedRequests();
        this.budget = budget;
    }

    KvBudget budget() {
        return budget;
    }

    /**
     * Admits {@code request}: it starts when no request waits, a slot is free and its reservation fits; else it queues
     * while the queue has room.
     *
     * @throws KvBudgetExceededException when its reservation is larger than the whole budget (it could never run)
     * @throws PipelineOverloadedException when it cannot start and the queue is full
     */
    Decision admit(PipelineRequest request) {
        long bytes = budget.reservation(request);
        if (bytes > budget.bytes()) {
            throw new KvBudgetExceededException(request.promptIds().length, request.maxNewTokens(), bytes, budget);
        }
        synchronized (this) {
            if (queued == 0 && active < maxActive && bytes <= budget.bytes() - reserved) {
                active++;
                reserve(bytes);
                return Decision.START;
            }
            if (queued < maxQueued) {
                queued++;
                return Decision.QUEUE;
            }
            throw new PipelineOverloadedException(active, queued, reserved, budget);
        }
    }

    /** Starts a queued request of {@code bytes} if a slot is free and its reservation fits; false leaves it queued. */
    synchronized boolean startQueued(long bytes) {
        if (active < maxActive && bytes <= budget.bytes() - reserved) {
            queued--;
            active++;
            reserve(bytes);
            return true;
        }
        return false;
    }

    /** A queued request ended before it started (cancelled, past its deadline, failed): its place in the queue frees. */
    synchronized void queuedEnded() {
        if (queued <= 0) {
            throw new IllegalStateException("no queued request to end");
        }
        queued--;
    }

    /** A running request ended: its active slot frees; its reservation stays until {@link #release}. */
    synchronized void activeEnded() {
        if (active <= 0) {
            throw new IllegalStateException("no active request to end");
        }
        active--;
    }

    /** Gives back a reservation of {@code bytes}, once the caches it covered are freed. */
    synchronized void release(long bytes) {
        if (bytes < 0 || bytes > reserved) {
            throw new IllegalStateException("releasing " + bytes + " bytes of KV budget while " + reserved + " are reserved");
        }
        reserved -= bytes;
        releasedTotal += bytes;
    }

    private void reserve(long bytes) {
        reserved += bytes;
        reservedTotal += bytes;
    }

    /** Requests running now. */
    synchronized int active() {
        return active;
    }

    /** Requests waiting for room now. */
    synchronized int queued() {
        return queued;
    }

    /** Bytes of the budget reserved now. */
    synchronized long reservedBytes() {
        return reserved;
    }

    /** Bytes reserved since the start, over every request. */
    synchronized long reservedTotal() {
        return reservedTotal;
    }

    /** Bytes given back since the start: at most {@link #reservedTotal()}, equal to it once nothing is reserved. */
    synchronized long releasedTotal() {
        return releasedTotal;
    }
}
