package io.graphlane.testkit.sim;

import io.graphlane.core.backend.AbstractSubmissionBackend;
import io.graphlane.core.backend.ExecutorClosedException;
import io.graphlane.core.completion.Completion;
import io.graphlane.core.completion.Outcome;
import io.graphlane.core.completion.SettableCompletion;
import io.graphlane.testkit.ledger.RetentionLedger;
import java.time.Duration;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.Random;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A simulated device that keeps every law of the submission contract: lanes run their
 * submissions in order for a given span of simulated device time without burning a CPU core,
 * {@code orderAfter} holds a lane until a producer of the same device has ended and poisons the
 * next submission if it failed, and retained values are released exactly once after their exact
 * completion. A test controls it by hand: held work ({@link SimWork#held}) ends when the test
 * {@linkplain #release releases} or {@linkplain #fail fails} it, a seed reorders independent
 * completions, and {@link #loseDevice} makes every pending completion unproven, so values retained
 * by it are leaked on purpose and reported instead of freed.
 *
 * <p>Device time is either wall-clock time (the default: one device thread sleeps until the next
 * item is due; fit for benchmarks) or manual virtual time (nothing moves until the test calls
 * {@link #advance} or {@link #runUntilIdle}; exactly reproducible).
 */
public final class SimBackend extends AbstractSubmissionBackend<SimExecutor, SimCompletion, SimWork> {
    private static final Logger LOG = LoggerFactory.getLogger(SimBackend.class);
    private static final AtomicInteger DEVICES = new AtomicInteger();

    /** How device time relates to the wall clock. */
    public enum TimeMode {
        /** A nanosecond of device time is a wall-clock nanosecond; a device thread drives the work. */
        WALL_CLOCK,
        /** Device time is virtual and moves only in {@link #advance} and {@link #runUntilIdle}, on the caller's thread. */
        MANUAL
    }

    /**
     * A value retained by a completion that can never be proven, leaked on purpose.
     *
     * @param value a description of the value
     * @param completion the label of the unproven completion
     * @param reason why the device lost it
     */
    public record LeakReport(String value, String completion, String reason) { }

    private final TimeMode timeMode;
    private final Long seed;
    private final RetentionLedger ledger;
    private final SimDevice device;
    private final CopyOnWriteArrayList<LeakReport> leaks = new CopyOnWriteArrayList<>();
    private volatile String lostReason;

    private SimBackend(Builder b) {
        super(b.name != null ? b.name : "sim" + DEVICES.getAndIncrement());
        this.timeMode = b.timeMode;
        this.seed = b.seed;
        this.ledger = b.ledger;
        DeviceDriver driver = timeMode == TimeMode.MANUAL ? new ManualDriver() : new WallClockDriver(deviceName());
        this.device = new SimDevice(deviceName(), driver, seed == null ? null : new Random(seed), b.jitter.toNanos(), b.recordTimeline);
        openRootExecutor();
    }

    /** A wall-clock simulated device with default settings. */
    public static SimBackend create() {
        return builder().build();
    }

    /** A builder: wall-clock time, no reordering, no jitter, no ledger, no timeline unless asked. */
    public static Builder builder() {
        return new Builder();
    }

    // ---- SubmissionBackend ----

    @Override
    protected SimExecutor createExecutor(String name) {
        SimExecutor executor = new SimExecutor(this, name);
        device.driver().post(() -> device.onAddLane(executor));
        return executor;
    }

    @Override
    protected SimBackend executorBackend(SimExecutor executor) {
        return executor.device();
    }

    @Override
    protected String executorName(SimExecutor executor) {
        return executor.name();
    }

    @Override
    protected SimBackend completionBackend(SimCompletion completion) {
        return completion.device();
    }

    /** A lost device forks no lanes. */
    @Override
    protected void checkUsable(String operation) {
        checkNotLost(operation);
    }

    @Override
    protected SimCompletion enqueue(SimExecutor executor, List<? extends SimWork> work) {
        List<SimWork> items = List.copyOf(work);
        synchronized (executor) {
            checkOpen(executor, "submit");
            SimCompletion completion = new SimCompletion(this, executor.nextLabel());
            List<SimCompletion> preconditions = executor.takePreconditions();
            if (items.isEmpty() && preconditions.isEmpty()) {
                completion.end(Outcome.success(), device.driver().nowNanos(), true);
                return completion;
            }
            SimDevice.Submission s = new SimDevice.Submission(executor, completion, items, preconditions);
            device.driver().post(() -> device.onEnqueue(s));
            return completion;
        }
    }

    @Override
    protected void enqueueWait(SimCompletion producer, SimExecutor executor) {
        synchronized (executor) {
            checkOpen(executor, "orderAfter");
            Outcome known = producer.deviceOutcome();
            if (known != null && known.isSuccess()) {
                return; // already proven: the order holds without a wait
            }
            executor.addPrecondition(producer);
        }
    }

    /**
     * {@inheritDoc}
     *
     * <p>A value that is a {@link RetentionLedger.Entry} is recorded in its own ledger; any other value
     * in this backend's ledger, if it has one. If the completion ends unproven (the device was lost),
     * the value is leaked: reported in {@link #leaks()}, logged, marked in the ledger, never closed.
     */
    @Override
    public void retainUntilComplete(SimExecutor executor, SimCompletion completion, Object value) {
        checkOwned(executor, "retainUntilComplete");
        Objects.requireNonNull(completion, "completion");
        Objects.requireNonNull(value, "value");
        RetentionLedger.Entry entry = trackedEntry(completion, value);
        AtomicBoolean settled = new AtomicBoolean();
        completion.whenDone(outcome -> {
            if (settled.compareAndSet(false, true)) {
                if (completion.isUnproven()) {
                    leak(completion, value, entry, outcome);
                } else {
                    release(completion, value, entry);
                }
            }
        });
    }

    @Override
    protected Completion closeExecutor(SimExecutor executor) {
        synchronized (executor) {
            if (executor.close()) {
                device.driver().post(() -> device.onStop(executor));
            }
        }
        return executor.stopped;
    }

    /** Once every lane has stopped: stops the device driver (its thread, with wall-clock time). */
    @Override
    protected void stopDevice(List<Completion> executorsStopped, SettableCompletion done) {
        device.driver().close();
        done.succeed();
    }

    /**
     * Shuts down and waits until every lane has drained. With manual time the device is driven
     * here until idle; if held work still keeps a lane busy, this fails naming it instead of hanging.
     */
    @Override
    public void close() {
        Completion stopped = shutdown();
        if (timeMode == TimeMode.MANUAL) {
            runUntilIdle();
            if (!stopped.isDone()) {
                List<String> busy = executors().stream().filter(e -> !e.stopped.isDone()).map(SimExecutor::name).toList();
                throw new IllegalStateException("close: lanes " + busy + " of " + deviceName()
                        + " still hold work that was never released; release or fail their held work first");
            }
            return;
        }
        try {
            stopped.await();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    // ---- controls for tests ----

    /** Lets held work named {@code hold} succeed (now, or as soon as it starts); false if the hold was already decided. */
    public boolean release(String hold) {
        return decide(hold, Outcome.success());
    }

    /** Makes held work named {@code hold} fail with {@code cause}; false if the hold was already decided. */
    public boolean fail(String hold, Throwable cause) {
        return decide(hold, Outcome.failure(Objects.requireNonNull(cause, "cause")));
    }

    /** True once held work named {@code hold} has started on its lane. */
    public boolean isStarted(String hold) {
        return device.hold(hold).started.isDone();
    }

    /** A stage that completes when held work named {@code hold} starts on its lane. */
    public CompletionStage<Void> whenStarted(String hold) {
        return device.hold(hold).started.copy();
    }

    /**
     * Loses the device: every submission not yet ended completes failed with a
     * {@link SimDeviceLostException} and is marked unproven, so the values it retained are leaked and
     * reported, never freed; later state-changing calls are refused. With manual time it takes effect
     * at the next {@link #advance} or {@link #runUntilIdle}.
     */
    public void loseDevice(String reason) {
        Objects.requireNonNull(reason, "reason");
        synchronized (this) {
            if (lostReason != null) {
                return;
            }
            lostReason = reason;
        }
        LOG.warn("simulated device {} lost: {}", deviceName(), reason);
        device.driver().post(() -> device.onLost(reason));
    }

    /** True once {@link #loseDevice} was called. */
    public boolean isLost() {
        return lostReason != null;
    }

    /** Every value leaked on purpose because its completion can never be proven, in the order reported. */
    public List<LeakReport> leaks() {
        return List.copyOf(leaks);
    }

    /** The ledger every retained value is recorded in, if the backend was built with one. */
    public Optional<RetentionLedger> ledger() {
        return Optional.ofNullable(ledger);
    }

    /** The seed that orders independent completions, if one was given. */
    public OptionalLong seed() {
        return seed == null ? OptionalLong.empty() : OptionalLong.of(seed);
    }

    /** How device time relates to the wall clock for this backend. */
    public TimeMode timeMode() {
        return timeMode;
    }

    /** The current device time since this backend started. */
    public Duration now() {
        return Duration.ofNanos(device.driver().nowNanos());
    }

    /**
     * Manual time: runs everything that is ready and every timed event due within {@code step}, then
     * sets device time to now + step. Callbacks run on the calling thread.
     *
     * @throws IllegalStateException with wall-clock time, or when called from inside the device
     */
    public Duration advance(Duration step) {
        return Duration.ofNanos(manual("advance").advance(step.toNanos()));
    }

    /**
     * Manual time: runs until nothing more can happen without the test (held work still waiting,
     * or every lane empty), moving device time to each timed event; returns the final device time.
     *
     * @throws IllegalStateException with wall-clock time, or when called from inside the device
     */
    public Duration runUntilIdle() {
        return Duration.ofNanos(manual("runUntilIdle").runUntilIdle());
    }

    /**
     * Manual time: parks the calling thread until something is posted to the device (a submission,
     * a hold decided, a lane stopped) or {@code max} passes, or the thread is unparked; true if there
     * is something to drive. Lets a test that drives the device for actors wait for their next
     * submission without polling.
     *
     * @throws IllegalStateException with wall-clock time
     */
    public boolean awaitActivity(Duration max) {
        return manual("awaitActivity").awaitPosted(max.toNanos());
    }

    /**
     * Manual time: how many posted commands (submissions, holds decided, lanes stopped) and timed events (work running
     * until a device time) wait for the test to drive the device with {@link #advance} or {@link #runUntilIdle}. Work
     * that is {@link SimWork#held held} for the test's decision is not counted.
     *
     * @throws IllegalStateException with wall-clock time
     */
    public int pendingDeviceEvents() {
        return manual("pendingDeviceEvents").pendingEvents();
    }

    /**
     * The START and END events of every submission so far, in device order; empty unless the
     * backend was built with {@link Builder#recordTimeline()}.
     */
    public List<SimEvent> timeline() {
        return device.timeline();
    }

    /** The device time from the first START to the last END in the timeline; zero if it is empty. */
    public Duration makespan() {
        long first = Long.MAX_VALUE;
        long last = Long.MIN_VALUE;
        for (SimEvent e : device.timeline()) {
            if (e.kind() == SimEvent.Kind.START) {
                first = Math.min(first, e.deviceNanos());
            } else {
                last = Math.max(last, e.deviceNanos());
            }
        }
        return first == Long.MAX_VALUE || last < first ? Duration.ZERO : Duration.ofNanos(last - first);
    }

    @Override
    public String toString() {
        return "SimBackend(" + deviceName() + ", " + timeMode + (seed == null ? "" : ", seed " + seed) + ", "
                + executors().size() + " executors)";
    }

    // ---- internals ----

    private boolean decide(String hold, Outcome decision) {
        Objects.requireNonNull(hold, "hold");
        SimDevice.Hold h = device.hold(hold);
        if (!h.decide(decision)) {
            return false;
        }
        device.driver().post(() -> device.onHoldDecided(h));
        return true;
    }

    private ManualDriver manual(String call) {
        if (device.driver() instanceof ManualDriver manual) {
            return manual;
        }
        throw new IllegalStateException(call + ": device " + deviceName() + " runs on wall-clock time; build it with "
                + "SimBackend.builder().manualTime() to drive device time by hand");
    }

    private RetentionLedger.Entry trackedEntry(SimCompletion completion, Object value) {
        if (value instanceof RetentionLedger.Entry entry) {
            if (entry.completions().stream().noneMatch(c -> c == completion)) {
                entry.heldUntil(completion);
            }
            return entry;
        }
        if (ledger == null) {
            return null;
        }
        return ledger.retain(describe(value), completion, value instanceof AutoCloseable closeable ? closeable : null);
    }

    private void release(SimCompletion completion, Object value, RetentionLedger.Entry entry) {
        try {
            if (entry != null) {
                entry.close();
            } else if (value instanceof AutoCloseable closeable) {
                closeable.close();
            }
        } catch (Exception e) {
            LOG.warn("closing a value retained by {} failed", completion.label(), e);
        }
    }

    private void leak(SimCompletion completion, Object value, RetentionLedger.Entry entry, Outcome outcome) {
        String reason = "device " + deviceName() + " lost before " + completion.label() + " was proven";
        LeakReport report = new LeakReport(entry != null ? entry.name() : describe(value), completion.label(), reason);
        leaks.add(report);
        LOG.warn("leaking {} on purpose: {} ({})", report.value(), reason, outcome);
        if (entry != null) {
            entry.ledger().markUnproven(completion, reason);
            entry.reportLeak(reason);
        }
    }

    private static String describe(Object value) {
        String s = String.valueOf(value);
        return s.length() <= 80 ? s : s.substring(0, 77) + "...";
    }

    private void checkOpen(SimExecutor executor, String operation) {
        checkNotLost(operation);
        if (executor.isClosed()) {
            throw new ExecutorClosedException(executor.name(), operation);
        }
    }

    private void checkNotLost(String operation) {
        String reason = lostReason;
        if (reason != null) {
            throw new SimDeviceLostException(deviceName(), operation + " refused", reason);
        }
    }

    /** Settings of a simulated device. */
    public static final class Builder {
        private String name;
        private TimeMode timeMode = TimeMode.WALL_CLOCK;
        private Long seed;
        private Duration jitter = Duration.ZERO;
        private RetentionLedger ledger;
        private boolean recordTimeline;

        private Builder() {
        }

        /** The device name used in labels and errors (default {@code simN}). */
        public Builder name(String deviceName) {
            this.name = Objects.requireNonNull(deviceName, "deviceName");
            return this;
        }

        /** Device time is wall-clock time, driven by one device thread (the default). */
        public Builder wallClock() {
            this.timeMode = TimeMode.WALL_CLOCK;
            return this;
        }

        /** Device time is virtual and moves only in {@link SimBackend#advance} and {@link SimBackend#runUntilIdle}. */
        public Builder manualTime() {
            this.timeMode = TimeMode.MANUAL;
            return this;
        }

        /**
         * Reorders independent completions: whenever several lanes can make progress, the next is
         * picked at random from this seed. FIFO and {@code orderAfter} edges always hold.
         */
        public Builder seed(long seed) {
            this.seed = seed;
            return this;
        }

        /** Adds a random extra duration in [0, max] to every work item (requires a seed, to stay reproducible). */
        public Builder jitter(Duration max) {
            Objects.requireNonNull(max, "max");
            if (max.isNegative()) {
                throw new IllegalArgumentException("jitter must be >= 0, got " + max);
            }
            this.jitter = max;
            return this;
        }

        /** Records every retained value in {@code ledger}. */
        public Builder ledger(RetentionLedger ledger) {
            this.ledger = Objects.requireNonNull(ledger, "ledger");
            return this;
        }

        /** Keeps a timeline of every submission's START and END (see {@link SimBackend#timeline()}). */
        public Builder recordTimeline() {
            this.recordTimeline = true;
            return this;
        }

        /** A new simulated device with these settings. */
        public SimBackend build() {
            if (!jitter.isZero() && seed == null) {
                throw new IllegalStateException("jitter(" + jitter + ") needs seed(...) so that a run can be reproduced");
            }
            return new SimBackend(this);
        }
    }
}
