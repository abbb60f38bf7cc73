package io.graphlane.backend.cpu.nn;

import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.atomic.LongAdder;
import java.util.concurrent.locks.LockSupport;

/**
 * Splits the rows of one Java kernel call over threads, as many as OpenBLAS is given per call
 * ({@link CpuNeuralBackend#setBlasThreads}: every core for a lone stage, one each once the lanes are as
 * many as the cores), so a Java projection uses the cores an OpenBLAS one would. The calling lane works
 * too and returns once every row is done, like an OpenBLAS call does.
 *
 * <p>A decode step makes dozens of such calls a few microseconds apart, so the hand-off must cost less than
 * waking a parked thread: each helper spins for {@value #SPIN_MICROS} µs after its last part before it parks.
 * The rows are taken in chunks from both ends, the caller from the front and its helpers from the back, each chunk
 * a share of the rows still open (a quarter for two threads) and never less than 1/{@value #MIN_CHUNK_DIVISOR} of a
 * part: the caller streams one contiguous run of weights, the chunks shrink toward the end so the threads finish
 * together, and a helper the OS has not scheduled yet delays a call by at most one chunk (the caller takes the rest)
 * and joins the next call as soon as it runs (a job whose rows are all taken is replaced, never waited for). Fixed
 * chunks taken in turn made both threads jump to a new run of weights at every chunk and wait up to a whole chunk
 * for each other at the end of each call: the demo model's decode-step projections back to back ran 3-17% slower
 * (one JVM, the two alternating step by step). Helpers are claimed per call,
 * so lanes that call at once each get their own or none and run alone; the helpers never spin while OpenBLAS
 * threads work, since a call runs either OpenBLAS or a Java kernel.
 */
final class RowParallel {
    /** Below this many weight bytes per part, splitting costs more than it saves. */
    private static final long MIN_BYTES_PER_PART = 64 * 1024;
    /** The smallest chunk is this fraction of a part: small enough that the threads end a call together. */
    private static final int MIN_CHUNK_DIVISOR = 16;
    /** How long an idle helper waits for the next call before it parks. */
    static final long SPIN_MICROS = 200;
    private static final Helper[] HELPERS = new Helper[Math.max(0, Runtime.getRuntime().availableProcessors() - 1)];
    private static volatile int threads = 1;
    /** {@link #callNanos}. */
    private static final LongAdder CALL_NANOS = new LongAdder();

    /** A part of the rows, {@code [from, to)}. */
    @FunctionalInterface
    interface Rows {
        void run(int from, int to);
    }

    private RowParallel() {
    }

    /** Sets the threads one call uses (what {@link CpuNeuralBackend#setBlasThreads} gives OpenBLAS). */
    static void setThreads(int count) {
        threads = Math.max(1, count);
    }

    /** The threads one call uses. */
    static int threads() {
        return threads;
    }

    /** Runs {@code body} over {@code rows} rows of {@code bytesPerRow} bytes each, split in up to {@link #threads} parts. */
    static void forRows(int rows, long bytesPerRow, Rows body) {
        long start = System.nanoTime();
        try {
            split(rows, bytesPerRow, body);
        } finally {
            CALL_NANOS.add(System.nanoTime() - start);
        }
    }

    /**
     * The wall time, in nanoseconds, that callers have spent in {@link #forRows} since this JVM started, summed over the
     * calling threads (a call's helpers work within its caller's time).
     */
    static long callNanos() {
        return CALL_NANOS.sum();
    }

    private static void split(int rows, long bytesPerRow, Rows body) {
        int parts = (int) Math.min(Math.min(threads, HELPERS.length + 1), Math.max(1, rows * bytesPerRow / MIN_BYTES_PER_PART));
        parts = Math.min(parts, rows);
        if (parts <= 1) {
            body.run(0, rows);
            return;
        }
        Job job = new Job(body, rows, parts);
        int claimed = 0;
        for (int h = 0; h < HELPERS.length && claimed < parts - 1; h++) {
            if (helper(h).offer(job)) {
                claimed++;
            }
        }
        job.work(true);
        job.awaitDone();
        if (job.failure != null) {
            throw job.failure;
        }
    }

    private static Helper helper(int index) {
        Helper helper = HELPERS[index];
        if (helper == null) {
            synchronized (HELPERS) {
                helper = HELPERS[index];
                if (helper == null) {
                    helper = new Helper(index);
                    HELPERS[index] = helper;
                }
            }
        }
        return helper;
    }

    /** One call's rows, taken in chunks from the front by the caller and from the back by its helpers. */
    private static final class Job {
        private final Rows body;
        private final int parts;
        private final int minRows;
        /** The rows not taken yet, {@code [front, back)}, as {@code front << 32 | back}. */
        private final AtomicLong open;
        /** The rows not done yet (taken or not). */
        private final AtomicInteger unfinished;
        private volatile RuntimeException failure;

        Job(Rows body, int rows, int parts) {
            this.body = body;
            this.parts = parts;
            this.minRows = Math.max(1, rows / (MIN_CHUNK_DIVISOR * parts));
            this.open = new AtomicLong(rows);
            this.unfinished = new AtomicInteger(rows);
        }

        /** True while some row is not taken yet. */
        boolean hasChunksLeft() {
            long o = open.get();
            return (int) (o >>> 32) < (int) o;
        }

        /** Runs chunks, from the front when {@code front} and else from the back, until no row is left to take. */
        void work(boolean front) {
            while (true) {
                long o = open.get();
                int lo = (int) (o >>> 32);
                int hi = (int) o;
                if (lo >= hi) {
                    return;
                }
                int size = Math.min(hi - lo, Math.max(minRows, (hi - lo) / (2 * parts)));
                int from = front ? lo : hi - size;
                long rest = front ? ((long) (lo + size) << 32) | hi : ((long) lo << 32) | (hi - size);
                if (!open.compareAndSet(o, rest)) {
                    continue;
                }
                try {
                    body.run(from, from + size);
                } catch (RuntimeException | Error e) {
                    fail(e instanceof RuntimeException r ? r : new IllegalStateException(e));
                } finally {
                    unfinished.addAndGet(-size);
                }
            }
        }

        private synchronized void fail(RuntimeException e) {
            if (failure == null) {
                failure = e;
            } else {
                failure.addSuppressed(e);
            }
        }

        /** Waits, spinning, until the chunks other threads took are done (each a fraction of the call). */
        void awaitDone() {
            int spins = 0;
            while (unfinished.get() > 0) {
                if (++spins < 1 << 12) {
                    Thread.onSpinWait();
                } else {
                    Thread.yield();
                }
            }
        }
    }

    /** A daemon thread that works on the jobs offered to it, spinning briefly between them and parked otherwise. */
    private static final class Helper implements Runnable {
        private final Thread thread;
        /** The latest job offered; one whose chunks are all taken is stale, and the next call's replaces it. */
        private final AtomicReference<Job> job = new AtomicReference<>();
        private volatile boolean parked;

        Helper(int index) {
            thread = new Thread(this, "graphlane-rows-" + index);
            thread.setDaemon(true);
            thread.start();
        }

        /**
         * Hands {@code offered} to this helper unless it holds another call's job that still has chunks to take. A job
         * whose chunks are all taken (by this helper, or by its caller when the OS had not run this helper in time) is
         * replaced at once, so a late helper joins the next call as soon as it runs instead of keeping it out.
         */
        boolean offer(Job offered) {
            Job current = job.get();
            if ((current != null && current.hasChunksLeft()) || !job.compareAndSet(current, offered)) {
                return false;
            }
            if (parked) {
                LockSupport.unpark(thread);
            }
            return true;
        }

        @Override
        public void run() {
            long idleSince = System.nanoTime();
            int spins = 0;
            while (true) {
                Job current = job.get();
                if (current != null && current.hasChunksLeft()) {
                    current.work(false);
                    idleSince = System.nanoTime();
                    spins = 0;
                } else if ((++spins & 63) != 0 || System.nanoTime() - idleSince < SPIN_MICROS * 1000) {
                    Thread.onSpinWait();
                } else {
                    // parked is set before the last look at the slot and offer() sets the slot before it reads parked
                    // (both volatile), so an offer either is seen here or unparks this thread.
                    parked = true;
                    Job latest = job.get();
                    if (latest == null || !latest.hasChunksLeft()) {
                        job.compareAndSet(latest, null); // drops the stale job (and its buffers) unless a new one came
                        Job now = job.get();
                        if (now == null || !now.hasChunksLeft()) {
                            LockSupport.park(this);
                        }
                    }
                    parked = false;
                    idleSince = System.nanoTime();
                }
            }
        }
    }
}
