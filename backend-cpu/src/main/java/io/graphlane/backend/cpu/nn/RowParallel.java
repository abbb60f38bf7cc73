package io.graphlane.backend.cpu.nn;

import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;

/**
 * Splits the rows of one Java kernel call over threads, as many as OpenBLAS is given per call
 * ({@link CpuNeuralBackend#setBlasThreads}: every core for a lone stage, one each once the lanes are as
 * many as the cores), so a Java projection uses the cores an OpenBLAS one would. The calling lane works
 * too and returns once every row is done, like an OpenBLAS call does.
 *
 * <p>A decode step makes dozens of such calls a few microseconds apart, so the hand-off must cost less than
 * waking a parked thread: each helper spins for {@value #SPIN_MICROS} µs after its last part before it parks,
 * and the rows are cut into chunks that whichever thread is free takes next, so a helper the OS has not
 * scheduled yet delays a call by at most one chunk (the caller takes the rest) and joins the next call as soon as
 * it runs (a job whose chunks are all taken is replaced, never waited for). Helpers are claimed per call,
 * so lanes that call at once each get their own or none and run alone; the helpers never spin while OpenBLAS
 * threads work, since a call runs either OpenBLAS or a Java kernel.
 */
final class RowParallel {
    /** Below this many weight bytes per part, splitting costs more than it saves. */
    private static final long MIN_BYTES_PER_PART = 64 * 1024;
    /** Chunks per part: enough that a late thread costs little, few enough that taking one is cheap. */
    private static final int CHUNKS_PER_PART = 4;
    /** How long an idle helper waits for the next call before it parks. */
    static final long SPIN_MICROS = 200;
    private static final Helper[] HELPERS = new Helper[Math.max(0, Runtime.getRuntime().availableProcessors() - 1)];
    private static volatile int threads = 1;

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
        int parts = (int) Math.min(Math.min(threads, HELPERS.length + 1), Math.max(1, rows * bytesPerRow / MIN_BYTES_PER_PART));
        parts = Math.min(parts, rows);
        if (parts <= 1) {
            body.run(0, rows);
            return;
        }
        Job job = new Job(body, rows, Math.min(rows, parts * CHUNKS_PER_PART));
        int claimed = 0;
        for (int h = 0; h < HELPERS.length && claimed < parts - 1; h++) {
            if (helper(h).offer(job)) {
                claimed++;
            }
        }
        job.work();
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

    /** One call's rows, cut into chunks that the caller and its helpers take in turn. */
    private static final class Job {
        private final Rows body;
        private final int rows;
        private final int chunks;
        private final AtomicInteger next = new AtomicInteger();
        private final AtomicInteger unfinished;
        private volatile RuntimeException failure;

        Job(Rows body, int rows, int chunks) {
            this.body = body;
            this.rows = rows;
            this.chunks = chunks;
            this.unfinished = new AtomicInteger(chunks);
        }

        /** True while some chunk is not taken yet. */
        boolean hasChunksLeft() {
            return next.get() < chunks;
        }

        /** Runs chunks until none is left to take. */
        void work() {
            int c;
            while ((c = next.getAndIncrement()) < chunks) {
                try {
                    body.run((int) ((long) rows * c / chunks), (int) ((long) rows * (c + 1) / chunks));
                } catch (RuntimeException | Error e) {
                    fail(e instanceof RuntimeException r ? r : new IllegalStateException(e));
                } finally {
                    unfinished.decrementAndGet();
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
                    current.work();
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
