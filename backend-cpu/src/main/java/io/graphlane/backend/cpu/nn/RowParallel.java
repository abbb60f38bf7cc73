package io.graphlane.backend.cpu.nn;

import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
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
 * scheduled yet delays a call by at most one chunk (the caller takes the rest). Helpers are claimed per call,
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
        private final AtomicBoolean busy = new AtomicBoolean();
        private final Thread thread;
        private volatile Job job;
        private volatile boolean parked;

        Helper(int index) {
            thread = new Thread(this, "graphlane-rows-" + index);
            thread.setDaemon(true);
            thread.start();
        }

        /** Hands {@code offered} to this helper unless it is busy with another call's job. */
        boolean offer(Job offered) {
            if (!busy.compareAndSet(false, true)) {
                return false;
            }
            job = offered;
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
                Job current = job;
                if (current != null) {
                    current.work();
                    job = null;
                    busy.set(false);
                    idleSince = System.nanoTime();
                    spins = 0;
                } else if ((++spins & 63) != 0 || System.nanoTime() - idleSince < SPIN_MICROS * 1000) {
                    Thread.onSpinWait();
                } else {
                    parked = true;
                    if (job == null) {
                        LockSupport.park(this);
                    }
                    parked = false;
                    idleSince = System.nanoTime();
                }
            }
        }
    }
}
