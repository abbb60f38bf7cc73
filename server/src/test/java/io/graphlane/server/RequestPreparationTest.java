package io.graphlane.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** The preparation threads: a bounded queue behind them, 429 beyond it, 503 after close, a failure handed to its request. */
class RequestPreparationTest {

    /** A preparation that waits for {@code release} after counting down {@code started}. */
    private static String held(CountDownLatch started, CountDownLatch release, String value) {
        started.countDown();
        try {
            release.await();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted", e);
        }
        return value;
    }

    private static ApiError refusal(CompletableFuture<?> f) {
        assertTrue(f.isDone(), "refused at once");
        ExecutionException e = assertThrows(ExecutionException.class, f::get);
        return assertInstanceOf(ApiError.class, e.getCause());
    }

    @Test
    void aRequestBeyondTheBusyThreadsAndTheFullQueueIsRefusedAtOnceWith429() throws Exception {
        try (RequestPreparation preparation = new RequestPreparation(1, 1)) {
            CountDownLatch started = new CountDownLatch(1);
            CountDownLatch release = new CountDownLatch(1);
            CompletableFuture<String> running = preparation.submit(() -> held(started, release, "a"));
            assertTrue(started.await(10, TimeUnit.SECONDS));
            CompletableFuture<String> waiting = preparation.submit(() -> "b");
            ApiError refused = refusal(preparation.submit(() -> "c"));
            assertEquals(429, refused.status().intValue());
            assertEquals("overloaded", refused.code());
            assertFalse(waiting.isDone(), "the queued one waits for the thread");
            release.countDown();
            assertEquals("a", running.get(10, TimeUnit.SECONDS));
            assertEquals("b", waiting.get(10, TimeUnit.SECONDS));
        }
    }

    @Test
    void whatAPreparationThrowsFailsOnlyItsOwnRequest() throws Exception {
        try (RequestPreparation preparation = new RequestPreparation(1, 0)) {
            CompletableFuture<String> failed = preparation.submit(() -> {
                throw new StackOverflowError("deep");
            });
            ExecutionException e = assertThrows(ExecutionException.class, () -> failed.get(10, TimeUnit.SECONDS));
            assertInstanceOf(StackOverflowError.class, e.getCause());
            assertEquals("next", preparation.submit(() -> "next").get(10, TimeUnit.SECONDS));
        }
    }

    @Test
    void closingAnswersWaitingAndLaterRequests503() throws Exception {
        RequestPreparation preparation = new RequestPreparation(1, 1);
        CountDownLatch started = new CountDownLatch(1);
        CompletableFuture<String> running = preparation.submit(() -> held(started, new CountDownLatch(1), "a"));
        assertTrue(started.await(10, TimeUnit.SECONDS));
        CompletableFuture<String> waiting = preparation.submit(() -> "b");
        preparation.close();
        assertEquals(503, refusal(waiting).status().intValue());
        assertEquals(503, refusal(preparation.submit(() -> "c")).status().intValue());
        // The running one is interrupted by the close; it fails its own request.
        assertThrows(ExecutionException.class, () -> running.get(10, TimeUnit.SECONDS));
    }
}
