package io.graphlane.server;

import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.SynchronousQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Supplier;
import org.apache.pekko.http.javadsl.model.StatusCodes;

/**
 * The threads that prepare requests (read the JSON, check it, render the chat template, tokenize), so that Pekko's
 * dispatcher never runs that work: a few threads and a bounded queue. A request that finds both full fails at once
 * with a 429 and {@code Retry-After}; one submitted after {@link #close} with a 503.
 */
final class RequestPreparation implements AutoCloseable {
    private final ThreadPoolExecutor executor;
    private final int threads;
    private final int queue;

    RequestPreparation(int threads, int queue) {
        this.threads = threads;
        this.queue = queue;
        AtomicInteger count = new AtomicInteger();
        BlockingQueue<Runnable> waiting = queue == 0 ? new SynchronousQueue<>() : new ArrayBlockingQueue<>(queue);
        this.executor = new ThreadPoolExecutor(threads, threads, 0, TimeUnit.MILLISECONDS, waiting, r -> {
            Thread t = new Thread(r, "graphlane-request-preparation-" + count.incrementAndGet());
            t.setDaemon(true);
            return t;
        }, new ThreadPoolExecutor.AbortPolicy());
    }

    /**
     * Runs {@code work} on a preparation thread: its value, or what it threw, completes the result. Fails at once with
     * an {@link ApiError} 429 when every thread is busy and the queue is full, or 503 once closed.
     */
    <T> CompletableFuture<T> submit(Supplier<T> work) {
        Task<T> task = new Task<>(work, new CompletableFuture<>());
        try {
            executor.execute(task);
        } catch (RejectedExecutionException full) {
            task.refuse(executor.isShutdown() ? closed()
                    : new ApiError(StatusCodes.TOO_MANY_REQUESTS, "rate_limit_error", null, "overloaded",
                            "the server is busy preparing " + (threads + queue) + " other requests; retry shortly"));
        }
        return task.result();
    }

    /** Stops the threads: what runs finishes (it cannot be interrupted), what waits is answered 503. */
    @Override
    public void close() {
        for (Runnable dropped : executor.shutdownNow()) {
            ((Task<?>) dropped).refuse(closed());
        }
    }

    private static ApiError closed() {
        return new ApiError(StatusCodes.SERVICE_UNAVAILABLE, "server_error", null, "unavailable",
                "the server is shutting down and prepares no new requests; retry on another instance");
    }

    /** One request's preparation and the result its route waits for. */
    private record Task<T>(Supplier<T> work, CompletableFuture<T> result) implements Runnable {
        @Override
        public void run() {
            try {
                result.complete(work.get());
            } catch (Throwable t) {
                // Errors too (a stack overflow in a parser, say): they end this request, not the thread.
                result.completeExceptionally(t);
            }
        }

        void refuse(ApiError why) {
            result.completeExceptionally(why);
        }
    }
}
