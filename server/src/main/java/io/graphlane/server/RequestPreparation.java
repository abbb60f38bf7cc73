package io.graphlane.server;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.Semaphore;
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
    /**
     * The requests held (running or waiting), at most threads + queue. A request gives its place back before its
     * result completes, so the next request, sent once an answer arrived, always finds one.
     */
    private final Semaphore places;
    private final int held;

    RequestPreparation(int threads, int queue) {
        this.held = threads + queue;
        this.places = new Semaphore(held);
        AtomicInteger count = new AtomicInteger();
        this.executor = new ThreadPoolExecutor(threads, threads, 0, TimeUnit.MILLISECONDS, new LinkedBlockingQueue<>(), r -> {
            Thread t = new Thread(r, "graphlane-request-preparation-" + count.incrementAndGet());
            t.setDaemon(true);
            return t;
        });
    }

    /**
     * Runs {@code work} on a preparation thread: its value, or what it threw, completes the result. Fails at once with
     * an {@link ApiError} 429 when every thread is busy and the queue is full, or 503 once closed.
     */
    <T> CompletableFuture<T> submit(Supplier<T> work) {
        Task<T> task = new Task<>(work, new CompletableFuture<>(), places);
        if (executor.isShutdown()) {
            task.refuse(closed());
        } else if (!places.tryAcquire()) {
            task.refuse(new ApiError(StatusCodes.TOO_MANY_REQUESTS, "rate_limit_error", null, "overloaded",
                    "the server is busy preparing " + held + " other requests; retry shortly"));
        } else {
            try {
                executor.execute(task);
            } catch (RejectedExecutionException shutDown) {
                places.release();
                task.refuse(closed());
            }
        }
        return task.result();
    }

    /** Stops the threads: what waits is answered 503; what runs is interrupted, which tokenizing and rendering do not heed. */
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

    /** One request's preparation, the result its route waits for, and the place it holds until it ran. */
    private record Task<T>(Supplier<T> work, CompletableFuture<T> result, Semaphore places) implements Runnable {
        @Override
        public void run() {
            T value;
            try {
                value = work.get();
            } catch (Throwable t) {
                // Errors too (a stack overflow in a parser, say): they end this request, not the thread.
                places.release();
                result.completeExceptionally(t);
                return;
            }
            places.release();
            result.complete(value);
        }

        void refuse(ApiError why) {
            result.completeExceptionally(why);
        }
    }
}
