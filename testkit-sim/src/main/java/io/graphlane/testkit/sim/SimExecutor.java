package io.graphlane.testkit.sim;

import io.graphlane.core.completion.SettableCompletion;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;

/**
 * One simulated lane: a FIFO of submissions on a simulated device. Callers touch only its
 * submission side (guarded by this object); the device engine alone touches its queue.
 */
public final class SimExecutor {
    private final SimBackend device;
    private final String name;

    // Caller side, guarded by this.
    private List<SimCompletion> pendingPreconditions = new ArrayList<>(2);
    private long sequence;
    private boolean closed;

    // Device side, touched only by the engine.
    final ArrayDeque<SimDevice.Submission> queue = new ArrayDeque<>();
    final SettableCompletion stopped;
    boolean stopRequested;
    /** Device time at which the last item of this lane ended (or is due to end). */
    long freeAtNanos;

    SimExecutor(SimBackend device, String name) {
        this.device = device;
        this.name = name;
        this.stopped = new SettableCompletion(name + " (stopped)");
    }

    /** The lane's name, {@code <device>/<lane>}. */
    public String name() {
        return name;
    }

    SimBackend device() {
        return device;
    }

    /** The label of the next submission on this lane; caller holds the lock. */
    String nextLabel() {
        return name + "#" + sequence++;
    }

    /** Takes the producers gathered by {@code orderAfter} since the last submission; caller holds the lock. */
    List<SimCompletion> takePreconditions() {
        if (pendingPreconditions.isEmpty()) {
            return List.of();
        }
        List<SimCompletion> taken = pendingPreconditions;
        pendingPreconditions = new ArrayList<>(2);
        return taken;
    }

    void addPrecondition(SimCompletion producer) {
        pendingPreconditions.add(producer);
    }

    boolean isClosed() {
        return closed;
    }

    /** Marks the lane closed; true if this call closed it. Caller holds the lock. */
    boolean close() {
        if (closed) {
            return false;
        }
        closed = true;
        return true;
    }

    @Override
    public String toString() {
        return name;
    }
}
