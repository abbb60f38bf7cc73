package io.graphlane.backend.cpu.nn;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicIntegerArray;
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
