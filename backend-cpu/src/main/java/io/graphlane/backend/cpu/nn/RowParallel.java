package io.graphlane.backend.cpu.nn;

import java.util.concurrent.ForkJoinPool;
import java.util.concurrent.ForkJoinTask;

/**
 * Splits the rows of one Java kernel call over threads, as many as OpenBLAS is given per call
 * ({@link CpuNeuralBackend#setBlasThreads}: every core for a lone stage, one each once the lanes are as
 * many as the cores), so a packed-weight projection uses the cores an F32 one would. The calling lane
 * runs the first part itself and waits for the rest, like an OpenBLAS call does.
 */
final class RowParallel {
    /** Below this many weight bytes per part, splitting costs more than it saves. */
    private static final long MIN_BYTES_PER_PART = 64 * 1024;
    private static final ForkJoinPool POOL = new ForkJoinPool(Math.max(1, Runtime.getRuntime().availableProcessors()));
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
        int parts = (int) Math.min(threads, Math.max(1, rows * bytesPerRow / MIN_BYTES_PER_PART));
        parts = Math.min(parts, rows);
        if (parts <= 1) {
            body.run(0, rows);
            return;
        }
        @SuppressWarnings("unchecked")
        ForkJoinTask<?>[] others = new ForkJoinTask<?>[parts - 1];
        for (int p = 1; p < parts; p++) {
            int from = (int) ((long) rows * p / parts);
            int to = (int) ((long) rows * (p + 1) / parts);
            others[p - 1] = POOL.submit(() -> body.run(from, to));
        }
        RuntimeException failure = null;
        try {
            body.run(0, (int) ((long) rows / parts));
        } catch (RuntimeException e) {
            failure = e;
        }
        for (ForkJoinTask<?> task : others) {
            try {
                task.join();
            } catch (RuntimeException e) {
                if (failure == null) {
                    failure = e;
                } else {
                    failure.addSuppressed(e);
                }
            }
        }
        if (failure != null) {
            throw failure;
        }
    }
}
