package io.graphlane.testkit.sim;

import io.graphlane.core.backend.TransferBackend;
import java.time.Duration;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

/**
 * The {@link TransferBackend} of the simulated device: a copy is one submission on the given lane that occupies it
 * for a settable time (a fixed latency plus the bytes over a bandwidth), then writes the destination; the source and
 * the destination are retained until the copy's exact completion (recorded in the device's retention ledger, if it
 * has one). Device bytes are counted against a budget in the lanes' order: taken when a promotion's copy starts,
 * given back when the weight's last holder lets go; a copy they do not fit fails;
 * {@link #failNextCopy} makes the next copy fail, as a faulty copy engine would.
 */
public final class SimTransferBackend implements TransferBackend<SimExecutor, SimWeight, SimHostBuffer> {
    private final SimBackend device;
    private final Duration latency;
    private final double bytesPerNano;
    private final long capacityBytes;
    private final AtomicLong usedBytes = new AtomicLong();
    private final AtomicLong peakBytes = new AtomicLong();
    private final AtomicLong promotions = new AtomicLong();
    private final AtomicReference<RuntimeException> nextFailure = new AtomicReference<>();
    private final AtomicReference<String> nextHold = new AtomicReference<>();
    private final AtomicReference<SimWeight> lastPromoted = new AtomicReference<>();

    /**
     * Copies on lanes of {@code device} lasting {@code latency} plus their bytes at {@code bytesPerSecond} (0 for
     * none), into a device tier of {@code capacityBytes}.
     */
    public SimTransferBackend(SimBackend device, Duration latency, double bytesPerSecond, long capacityBytes) {
        this.device = Objects.requireNonNull(device, "device");
        this.latency = Objects.requireNonNull(latency, "latency");
        if (latency.isNegative() || bytesPerSecond < 0 || capacityBytes < 0) {
            throw new IllegalArgumentException("a simulated transfer needs latency, bandwidth and capacity >= 0, got "
                    + latency + ", " + bytesPerSecond + ", " + capacityBytes);
        }
        this.bytesPerNano = bytesPerSecond / 1e9;
        this.capacityBytes = capacityBytes;
    }

    /** Copies lasting exactly {@code perCopy} each, into an unbounded device tier. */
    public static SimTransferBackend fixed(SimBackend device, Duration perCopy) {
        return new SimTransferBackend(device, perCopy, 0, Long.MAX_VALUE);
    }

    /** The next copy fails with {@code cause} when it ends (its destination is never published). */
    public void failNextCopy(RuntimeException cause) {
        nextFailure.set(Objects.requireNonNull(cause, "cause"));
    }

    /**
     * {@inheritDoc}
     *
     * <p>The destination's bytes are taken when the copy starts on the lane, in the lane's order, as CUDA's
     * stream-ordered allocator takes them; if they do not fit then, the copy fails naming the bytes needed and free.
     */
    /**
     * The next copy holds its lane once its bytes are taken, until the test {@linkplain SimBackend#release releases} (or
     * fails) the hold {@code name} on the device.
     */
    public void holdNextCopy(String name) {
        nextHold.set(Objects.requireNonNull(name, "name"));
    }

    /** The weight of the copy made last, for a test to watch. */
    public SimWeight lastPromoted() {
        return lastPromoted.get();
    }

    @Override
    public Transfer<SimWeight> promote(SimExecutor executor, SimHostBuffer host) {
        Objects.requireNonNull(host, "host");
        long bytes = host.bytes();
        SimWeight destination = new SimWeight(host.name(), bytes, this);
        AutoCloseable copyHold = destination.hold();
        RuntimeException failure = nextFailure.getAndSet(null);
        SimWork take = SimWork.callingFor(() -> take(destination), copyTime(bytes));
        SimWork write = failure != null ? SimWork.failing(failure) : SimWork.calling(() -> destination.publish(host.value()));
        lastPromoted.set(destination); // before the copy can start, so a test that sees its hold start finds it
        String hold = nextHold.getAndSet(null);
        List<SimWork> items = hold != null ? List.of(take, SimWork.held(hold), write) : List.of(take, write);
        SimCompletion completion;
        try {
            completion = device.submit(executor, items);
        } catch (RuntimeException e) {
            try {
                copyHold.close();
            } catch (Exception ignored) {
                // releasing a hold never throws
            }
            destination.close();
            throw e;
        }
        device.retainUntilComplete(executor, completion, copyHold);
        device.retainUntilComplete(executor, completion, new HostHold(host));
        promotions.incrementAndGet();
        return new SimTransfer<>(destination, completion);
    }

    private void take(SimWeight destination) {
        long bytes = destination.bytes();
        while (true) {
            long used = usedBytes.get();
            if (bytes > capacityBytes - used) {
                throw new IllegalStateException("simulated device tier: promoting " + destination.name() + " needs " + bytes + " bytes, "
                        + (capacityBytes - used) + " of " + capacityBytes + " are free");
            }
            if (usedBytes.compareAndSet(used, used + bytes)) {
                peakBytes.accumulateAndGet(used + bytes, Math::max);
                destination.taken();
                return;
            }
        }
    }

    /**
     * {@inheritDoc}
     *
     * <p>The host copy carries the contents the device weight has when the demotion is started: demote only a weight
     * whose promotion completed (else this throws, naming it). The device weight is held until the copy completed.
     */
    @Override
    public Transfer<SimHostBuffer> demote(SimExecutor executor, SimWeight weight) {
        SimHostBuffer destination = new SimHostBuffer(weight.name(), weight.bytes(), weight.read());
        AutoCloseable sourceHold = weight.hold();
        SimCompletion completion;
        try {
            completion = device.submit(executor, SimWork.lasting(copyTime(weight.bytes())));
        } catch (RuntimeException e) {
            try {
                sourceHold.close();
            } catch (Exception ignored) {
                // releasing a hold never throws
            }
            throw e;
        }
        device.retainUntilComplete(executor, completion, sourceHold);
        return new SimTransfer<>(destination, completion);
    }

    private Duration copyTime(long bytes) {
        long nanos = latency.toNanos() + (bytesPerNano > 0 ? Math.round(bytes / bytesPerNano) : 0);
        return Duration.ofNanos(nanos);
    }

    void free(SimWeight weight) {
        if (weight.wasTaken()) {
            usedBytes.addAndGet(-weight.bytes());
        }
    }

    /** Device bytes held by weights now. */
    public long usedBytes() {
        return usedBytes.get();
    }

    /** The most device bytes held at once so far. */
    public long peakBytes() {
        return peakBytes.get();
    }

    /** Promotions started so far. */
    public long promotions() {
        return promotions.get();
    }

    /** The device the copies run on. */
    public SimBackend device() {
        return device;
    }

    /** The source host buffer, held by a running copy. */
    private record HostHold(SimHostBuffer host) {
        @Override
        public String toString() {
            return "host " + host.name();
        }
    }

    private record SimTransfer<D>(D destination, SimCompletion completion) implements Transfer<D> {
    }
}
