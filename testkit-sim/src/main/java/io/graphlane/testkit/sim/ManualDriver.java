package io.graphlane.testkit.sim;

import java.util.PriorityQueue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.locks.LockSupport;

/**
 * Device time is virtual and moves only when the test says so ({@link #advance}, {@link #runUntilIdle}):
 * the engine then runs on the test's own thread, so a scenario (and, with a seed, its order of
 * completions) is exactly reproducible.
 */
final class ManualDriver implements DeviceDriver {
    /** A timed event; {@code seq} keeps events due at the same time in the order they were scheduled. */
    private record Timed(long due, long seq, Runnable event) { }

    private final ConcurrentLinkedQueue<Runnable> commands = new ConcurrentLinkedQueue<>();
    private final PriorityQueue<Timed> timers = new PriorityQueue<>((a, b) -> a.due != b.due ? Long.compare(a.due, b.due) : Long.compare(a.seq, b.seq));
    private volatile long now;
    private long seq;
    private Thread driving;
    private Runnable settle = () -> { };
    /** A thread parked in {@link #awaitPosted}, woken by the next post. */
    private volatile Thread waiter;

    @Override
    public void settleWith(Runnable engineStep) {
        this.settle = engineStep;
    }

    @Override
    public void post(Runnable command) {
        commands.add(command);
        Thread w = waiter;
        if (w != null) {
            LockSupport.unpark(w);
        }
    }

    /**
     * Parks the caller until a command is posted (work submitted, a hold decided) or {@code nanos}
     * pass, or the thread is unparked; true if commands are waiting to be driven.
     */
    boolean awaitPosted(long nanos) {
        if (!commands.isEmpty()) {
            return true;
        }
        waiter = Thread.currentThread();
        try {
            if (commands.isEmpty()) {
                LockSupport.parkNanos(this, nanos);
            }
            return !commands.isEmpty();
        } finally {
            waiter = null;
        }
    }

    @Override
    public void scheduleAt(long dueNanos, Runnable event) {
        timers.add(new Timed(Math.max(dueNanos, now), seq++, event));
    }

    @Override
    public long nowNanos() {
        return now;
    }

    @Override
    public void close() {
        // nothing runs on its own: there is no thread to stop
    }

    /** Runs every command and every timed event, moving device time forward to each event; returns the final time. */
    synchronized long runUntilIdle() {
        enter("runUntilIdle");
        try {
            while (true) {
                drainAndSettle();
                Timed next = timers.peek();
                if (next == null) {
                    return now;
                }
                runDueAt(next.due());
            }
        } finally {
            driving = null;
        }
    }

    /** Runs commands and the timed events due within {@code nanos} from now, then sets the time to now + nanos. */
    synchronized long advance(long nanos) {
        if (nanos < 0) {
            throw new IllegalArgumentException("advance: device time only moves forward, got " + nanos + " ns");
        }
        enter("advance");
        try {
            long target = now + nanos;
            while (true) {
                drainAndSettle();
                Timed next = timers.peek();
                if (next == null || next.due() > target) {
                    break;
                }
                runDueAt(next.due());
            }
            now = target;
            drainAndSettle();
            return now;
        } finally {
            driving = null;
        }
    }

    /** Posted commands and timed events that wait for the test to drive the device. */
    synchronized int pendingEvents() {
        return commands.size() + timers.size();
    }

    private void enter(String call) {
        if (driving != null) {
            throw new IllegalStateException(call + " was called from inside the simulated device (a completion callback or a"
                    + " SimWork.calling action); drive manual device time from the test, not from the device");
        }
        driving = Thread.currentThread();
    }

    /** Runs every posted command, then the engine step; again while the step posted more (callbacks that submit). */
    private void drainAndSettle() {
        do {
            Runnable c;
            while ((c = commands.poll()) != null) {
                c.run();
            }
            settle.run();
        } while (!commands.isEmpty());
    }

    /** Moves device time to {@code due} and runs every timed event due then, as one batch. */
    private void runDueAt(long due) {
        now = due;
        while (!timers.isEmpty() && timers.peek().due() == due) {
            timers.poll().event().run();
        }
    }
}
