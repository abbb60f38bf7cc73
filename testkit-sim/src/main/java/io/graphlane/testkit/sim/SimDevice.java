package io.graphlane.testkit.sim;

import io.graphlane.core.completion.Outcome;
import io.graphlane.core.completion.PoisonedPreconditionException;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The engine of one simulated device. Every method named {@code on…} and everything they call
 * runs on the device driver's single thread, so lane queues need no locks; callers reach the
 * engine only by posting commands. A lane's head submission starts once its preconditions have
 * ended, runs its items one after the other in device time, and ends; with a seed, the engine
 * picks the next lane to step at random among those that can make progress, which reorders
 * independent completions while keeping every FIFO and {@code orderAfter} edge.
 */
final class SimDevice {

    /** One submission as the engine tracks it. */
    static final class Submission {
        final SimExecutor lane;
        final SimCompletion completion;
        final List<SimWork> items;
        final List<SimCompletion> preconditions;
        long arrivalNanos;
        boolean running;
        int index;
        boolean itemReady;
        Throwable itemFailure;
        /** Device time at which the current item started; once it is ready, the time it ended. */
        long clockNanos;

        Submission(SimExecutor lane, SimCompletion completion, List<SimWork> items, List<SimCompletion> preconditions) {
            this.lane = lane;
            this.completion = completion;
            this.items = items;
            this.preconditions = preconditions;
        }
    }

    /** A named hold: the first decision (release or failure) wins and applies to every held item of that name. */
    static final class Hold {
        final String name;
        final CompletableFuture<Void> started = new CompletableFuture<>();
        /** Held items waiting for the decision; engine only. */
        final List<Submission> waiting = new ArrayList<>(1);
        private Outcome decision;

        Hold(String name) {
            this.name = name;
        }

        synchronized Outcome decision() {
            return decision;
        }

        synchronized boolean decide(Outcome outcome) {
            if (decision != null) {
                return false;
            }
            decision = outcome;
            return true;
        }
    }

    private final String deviceName;
    private final DeviceDriver driver;
    private final Random random;
    private final long jitterNanos;
    private final boolean recordTimeline;
    private final List<SimExecutor> lanes = new ArrayList<>();
    private final List<SimExecutor> candidates = new ArrayList<>();
    private final ConcurrentHashMap<String, Hold> holds = new ConcurrentHashMap<>();
    private final List<SimEvent> timeline = Collections.synchronizedList(new ArrayList<>());
    private long eventOrder;
    private int stopsRequested;
    private boolean lost;

    SimDevice(String deviceName, DeviceDriver driver, Random random, long jitterNanos, boolean recordTimeline) {
        this.deviceName = deviceName;
        this.driver = driver;
        this.random = random;
        this.jitterNanos = jitterNanos;
        this.recordTimeline = recordTimeline;
        driver.settleWith(this::settle);
    }

    DeviceDriver driver() {
        return driver;
    }

    Hold hold(String name) {
        return holds.computeIfAbsent(name, Hold::new);
    }

    List<SimEvent> timeline() {
        synchronized (timeline) {
            return List.copyOf(timeline);
        }
    }

    // ---- commands (device thread) ----

    void onAddLane(SimExecutor lane) {
        lanes.add(lane);
        if (lost) {
            lane.stopped.succeed();
        }
    }

    void onEnqueue(Submission s) {
        s.arrivalNanos = driver.nowNanos();
        if (lost) {
            SimCompletion c = s.completion;
            c.end(Outcome.failure(new SimDeviceLostException(deviceName, c.label() + " was never proven", "lost before it was queued")),
                    s.arrivalNanos, false);
            return;
        }
        s.lane.queue.add(s);
    }

    void onStop(SimExecutor lane) {
        if (!lane.stopRequested) {
            lane.stopRequested = true;
            stopsRequested++;
        }
    }

    void onHoldDecided(Hold hold) {
        Outcome decision = hold.decision();
        long now = driver.nowNanos();
        for (Submission s : hold.waiting) {
            if (decision instanceof Outcome.Failed failed) {
                s.itemFailure = failed.cause();
            }
            readyAt(s, Math.max(s.clockNanos, now) + jitter());
        }
        hold.waiting.clear();
    }

    void onLost(String reason) {
        if (lost) {
            return;
        }
        lost = true;
        long now = driver.nowNanos();
        List<SimCompletion> pending = new ArrayList<>();
        for (SimExecutor lane : lanes) {
            for (Submission s : lane.queue) {
                SimCompletion c = s.completion;
                c.endQuietly(Outcome.failure(new SimDeviceLostException(deviceName, c.label() + " was never proven", reason)), now, false);
                pending.add(c);
            }
            lane.queue.clear();
        }
        for (SimCompletion c : pending) {
            c.publish();
        }
        for (SimExecutor lane : lanes) {
            lane.stopped.succeed();
        }
    }

    // ---- the engine ----

    /** Steps lanes until none can make progress at the current device time; the driver calls it after each batch. */
    void settle() {
        if (lost) {
            return;
        }
        if (random == null) {
            boolean progress = true;
            while (progress) {
                progress = false;
                for (int i = 0; i < lanes.size(); i++) {
                    SimExecutor lane = lanes.get(i);
                    if (canStep(lane)) {
                        step(lane);
                        progress = true;
                    }
                }
            }
        } else {
            while (true) {
                candidates.clear();
                for (int i = 0; i < lanes.size(); i++) {
                    if (canStep(lanes.get(i))) {
                        candidates.add(lanes.get(i));
                    }
                }
                if (candidates.isEmpty()) {
                    break;
                }
                step(candidates.get(random.nextInt(candidates.size())));
            }
        }
        if (stopsRequested > 0) {
            for (int i = 0; i < lanes.size(); i++) {
                SimExecutor lane = lanes.get(i);
                if (lane.stopRequested && lane.queue.isEmpty() && !lane.stopped.isDone()) {
                    lane.stopped.succeed();
                }
            }
        }
    }

    private static boolean canStep(SimExecutor lane) {
        Submission head = lane.queue.peek();
        if (head == null) {
            return false;
        }
        if (head.running) {
            return head.itemReady;
        }
        for (int i = 0; i < head.preconditions.size(); i++) {
            if (head.preconditions.get(i).deviceOutcome() == null) {
                return false;
            }
        }
        return true;
    }

    private void step(SimExecutor lane) {
        Submission s = lane.queue.peek();
        if (!s.running) {
            long start = Math.max(s.arrivalNanos, lane.freeAtNanos);
            for (SimCompletion p : s.preconditions) {
                start = Math.max(start, p.endNanos());
            }
            for (SimCompletion p : s.preconditions) {
                if (p.deviceOutcome() instanceof Outcome.Failed failed) {
                    finish(s, Outcome.failure(PoisonedPreconditionException.of(s.completion.label(), p.label(), failed.cause())), start);
                    return;
                }
            }
            s.running = true;
            s.clockNanos = start;
            event(SimEvent.Kind.START, s, start, null);
            beginItem(s);
            return;
        }
        if (s.index == s.items.size()) {
            finish(s, Outcome.success(), s.clockNanos);
        } else if (s.itemFailure != null) {
            finish(s, Outcome.failure(s.itemFailure), s.clockNanos);
        } else {
            s.index++;
            beginItem(s);
        }
    }

    private void beginItem(Submission s) {
        s.itemReady = false;
        if (s.index == s.items.size()) {
            s.itemReady = true;
            return;
        }
        SimWork work = s.items.get(s.index);
        long at = s.clockNanos;
        if (work instanceof SimWork.Instant) {
            readyAt(s, at + jitter());
        } else if (work instanceof SimWork.Lasting lasting) {
            readyAt(s, at + lasting.duration().toNanos() + jitter());
        } else if (work instanceof SimWork.Failing failing) {
            s.itemFailure = failing.cause();
            readyAt(s, at + failing.duration().toNanos() + jitter());
        } else if (work instanceof SimWork.Calling calling) {
            call(s, calling.action());
            readyAt(s, at + jitter());
        } else if (work instanceof SimWork.CallingFor calling) {
            call(s, calling.action());
            readyAt(s, at + calling.duration().toNanos() + jitter());
        } else if (work instanceof SimWork.Held held) {
            Hold hold = hold(held.name());
            hold.started.complete(null);
            Outcome decision = hold.decision();
            if (decision == null) {
                hold.waiting.add(s);
            } else {
                if (decision instanceof Outcome.Failed failed) {
                    s.itemFailure = failed.cause();
                }
                readyAt(s, at + jitter());
            }
        }
    }

    /** Runs an item's action on the device thread; what it throws fails the submission. */
    private static void call(Submission s, Runnable action) {
        try {
            action.run();
        } catch (VirtualMachineError e) {
            throw e;
        } catch (RuntimeException | Error e) {
            s.itemFailure = e;
        }
    }

    private void readyAt(Submission s, long due) {
        s.clockNanos = due;
        if (due <= driver.nowNanos()) {
            s.itemReady = true;
            return;
        }
        driver.scheduleAt(due, () -> {
            if (!lost) {
                s.itemReady = true;
            }
        });
    }

    private void finish(Submission s, Outcome outcome, long atNanos) {
        s.lane.queue.poll();
        s.lane.freeAtNanos = atNanos;
        event(SimEvent.Kind.END, s, atNanos, outcome);
        s.completion.end(outcome, atNanos, true);
    }

    private long jitter() {
        return jitterNanos == 0 ? 0 : random.nextLong(jitterNanos + 1);
    }

    private void event(SimEvent.Kind kind, Submission s, long atNanos, Outcome outcome) {
        if (recordTimeline) {
            timeline.add(new SimEvent(++eventOrder, kind, s.completion.label(), s.lane.name(), atNanos, outcome));
        }
    }
}
