package io.graphlane.backend.cpu.nn;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicIntegerArray;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.DoubleAdder;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** The split of a call's rows over the calling thread and the helpers: every row once per call, whoever runs it. */
@Timeout(value = 2, unit = TimeUnit.MINUTES)
class RowParallelTest {
    /** Rows of 1 MiB each: every call is split into as many parts as threads. */
    private static final long ROW_BYTES = 1 << 20;

    @AfterEach
    void restoreThreads() {
        RowParallel.setThreads(1);
    }

    /** Thousands of calls back to back, as a decode step makes them: no row is skipped or run twice, whichever thread takes it. */
    @Test
    void everyRowOfEveryCallRunsExactlyOnce() {
        RowParallel.setThreads(Math.max(2, Runtime.getRuntime().availableProcessors()));
        for (int call = 0; call < 5_000; call++) {
            int rows = 1 + call % 97;
            AtomicIntegerArray runs = countedCall(rows);
            for (int r = 0; r < rows; r++) {
                assertEquals(1, runs.get(r), "call " + call + ", row " + r + " of " + rows);
            }
        }
    }

    /** Two lanes calling at once share the helpers (or run alone), and each call still sees each of its rows once. */
    @Test
    void lanesCallingAtOnceEachRunTheirOwnRowsExactlyOnce() {
        RowParallel.setThreads(Math.max(2, Runtime.getRuntime().availableProcessors()));
        Runnable lane = () -> {
            for (int call = 0; call < 2_000; call++) {
                int rows = 8 + call % 57;
                AtomicIntegerArray runs = countedCall(rows);
                for (int r = 0; r < rows; r++) {
                    if (runs.get(r) != 1) {
                        throw new AssertionError("call " + call + ": row " + r + " of " + rows + " ran " + runs.get(r) + " times");
                    }
                }
            }
        };
        CompletableFuture<Void> other = CompletableFuture.runAsync(lane);
        lane.run();
        other.join();
    }

    /**
     * The calling thread takes its rows from the front in one contiguous run, the helpers from the back, and the chunks
     * shrink toward the end: none of the caller's chunks is larger than the one before it.
     */
    @Test
    void theCallerStreamsOneRunFromTheFrontAndChunksShrinkTowardTheEnd() {
        RowParallel.setThreads(2);
        Thread caller = Thread.currentThread();
        for (int call = 0; call < 2_000; call++) {
            int rows = 64 + call % 1000;
            java.util.List<int[]> mine = java.util.Collections.synchronizedList(new java.util.ArrayList<>());
            java.util.List<int[]> theirs = java.util.Collections.synchronizedList(new java.util.ArrayList<>());
            RowParallel.forRows(rows, ROW_BYTES, (from, to) -> (Thread.currentThread() == caller ? mine : theirs).add(new int[] {from, to}));
            int next = 0;
            int last = Integer.MAX_VALUE;
            for (int[] chunk : mine) {
                assertEquals(next, chunk[0], "call " + call + ": the caller's chunks continue one another from row 0");
                int size = chunk[1] - chunk[0];
                assertTrue(size <= last, "call " + call + ": chunk " + java.util.Arrays.toString(chunk)
                        + " after one of " + last + " rows");
                last = size;
                next = chunk[1];
            }
            int back = rows;
            for (int[] chunk : theirs) {
                assertTrue(chunk[1] <= back, "call " + call + ": the helper's chunks come from the back, " + java.util.Arrays.toString(chunk));
                back = chunk[0];
            }
            assertEquals(rows, next + theirs.stream().mapToInt(c -> c[1] - c[0]).sum(), "call " + call + ": every row once");
            for (int[] chunk : theirs) {
                assertTrue(chunk[0] >= next, "call " + call + ": the helper took " + java.util.Arrays.toString(chunk) + " below the caller's run");
            }
        }
    }

    /** A part that fails fails the call with its exception once every other part is done. */
    @Test
    void aFailingPartFailsTheCall() {
        RowParallel.setThreads(2);
        IllegalStateException boom = new IllegalStateException("row 5");
        IllegalStateException thrown = assertThrows(IllegalStateException.class, () -> RowParallel.forRows(64, ROW_BYTES, (from, to) -> {
            if (from <= 5 && 5 < to) {
                throw boom;
            }
        }));
        assertSame(boom, thrown);
        AtomicIntegerArray runs = countedCall(64);
        for (int r = 0; r < 64; r++) {
            assertEquals(1, runs.get(r), "the call after a failure, row " + r);
        }
    }

    /**
     * The kernels' call time counts each call once, on its caller, from its start to its end: at least the longest chunk
     * (every chunk, whichever thread runs it, runs within the call), at most the call's wall time (the helpers' chunks add
     * nothing of their own), failed calls too.
     */
    @Test
    void callTimeCountsEachCallOnceOnItsCaller() {
        RowParallel.setThreads(2);
        AtomicLong longestChunk = new AtomicLong();
        DoubleAdder sink = new DoubleAdder();
        RowParallel.Rows busy = (from, to) -> {
            long start = System.nanoTime();
            double x = 0;
            for (int r = from; r < to; r++) {
                for (int i = 0; i < 20_000; i++) {
                    x += Math.sqrt(r + i);
                }
            }
            sink.add(x);
            longestChunk.accumulateAndGet(System.nanoTime() - start, Math::max);
        };
        for (int call = 0; call < 20; call++) {
            longestChunk.set(0);
            long before = RowParallel.callNanos();
            long start = System.nanoTime();
            RowParallel.forRows(64, ROW_BYTES, busy);
            long wall = System.nanoTime() - start;
            long counted = RowParallel.callNanos() - before;
            assertTrue(longestChunk.get() > 0 && counted >= longestChunk.get() && counted <= wall,
                    "call " + call + ": counted " + counted + " ns, the longest chunk " + longestChunk.get() + " ns, wall " + wall + " ns");
        }
        longestChunk.set(0);
        long before = RowParallel.callNanos();
        long start = System.nanoTime();
        assertThrows(IllegalStateException.class, () -> RowParallel.forRows(64, ROW_BYTES, (from, to) -> {
            busy.run(from, to);
            throw new IllegalStateException("rows " + from + ".." + to);
        }));
        long wall = System.nanoTime() - start;
        long counted = RowParallel.callNanos() - before;
        assertTrue(counted >= longestChunk.get() && longestChunk.get() > 0 && counted <= wall,
                "a failed call counts too: " + counted + " ns of " + wall + " ns, the longest chunk " + longestChunk.get() + " ns");
        assertTrue(sink.sum() > 0);
    }

    /** One call over {@code rows} rows; how many times each row ran. */
    private static AtomicIntegerArray countedCall(int rows) {
        AtomicIntegerArray runs = new AtomicIntegerArray(rows);
        RowParallel.forRows(rows, ROW_BYTES, (from, to) -> {
            for (int r = from; r < to; r++) {
                runs.incrementAndGet(r);
            }
        });
        return runs;
    }
}
