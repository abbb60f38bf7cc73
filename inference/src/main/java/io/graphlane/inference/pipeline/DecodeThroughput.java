package io.graphlane.inference.pipeline;

import io.graphlane.core.GraphlaneException;
import io.graphlane.inference.api.GenerationListener;
import io.graphlane.inference.api.GenerationRequest;
import io.graphlane.inference.api.GenerationResult;
import io.graphlane.inference.api.TextGenerator;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicLongArray;

/**
 * Decode throughput of a generator, measured the same way on every backend: after a short warm-up,
 * {@code requests} greedy requests of {@code newTokens} tokens (4-token prompts) are submitted at once;
 * decode is timed from the moment every request has its first token (all prompts prefilled) to the last
 * token, and counts the tokens generated in that window.
 *
 * @param requests the concurrent requests
 * @param decodeTokens tokens generated after every prompt was prefilled
 * @param decodeSeconds from the last first token to the last token
 * @param tokens every token generated
 * @param wallSeconds from submission to the last result
 */
public record DecodeThroughput(int requests, int decodeTokens, double decodeSeconds, int tokens, double wallSeconds) {

    /** Decode tokens per second. */
    public double decodeTokensPerSecond() {
        return decodeTokens / decodeSeconds;
    }

    /**
     * Measures {@code generator} (which must accept {@code requests} requests at once).
     *
     * @throws GraphlaneException if an argument is out of range or the run does not finish within {@code timeout}
     */
    public static DecodeThroughput measure(TextGenerator generator, int requests, int newTokens, Duration timeout) throws Exception {
        if (requests < 1 || newTokens < 2) {
            throw new GraphlaneException("decode throughput needs >= 1 request and >= 2 new tokens, got " + requests + " and " + newTokens);
        }
        generator.generateAll(List.of(GenerationRequest.greedy(List.of(1, 2), 4)), timeout); // warm-up
        ConcurrentLinkedQueue<Long> tokenTimes = new ConcurrentLinkedQueue<>();
        AtomicLongArray firstTokenAt = new AtomicLongArray(requests);
        List<CompletableFuture<GenerationResult>> results = new ArrayList<>();
        long start = System.nanoTime();
        for (int i = 0; i < requests; i++) {
            int index = i;
            GenerationRequest request = GenerationRequest.greedy(List.of(1 + i, 2 + i, 3 + i, 4 + i), newTokens);
            results.add(generator.submit(request, new GenerationListener() {
                @Override
                public void onToken(int tokenId) {
                    long now = System.nanoTime();
                    firstTokenAt.compareAndSet(index, 0, now);
                    tokenTimes.add(now);
                }
            }).result().toCompletableFuture());
        }
        int tokens = 0;
        long deadline = System.nanoTime() + timeout.toNanos();
        for (CompletableFuture<GenerationResult> r : results) {
            try {
                tokens += r.get(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS).generatedIds().size();
            } catch (ExecutionException e) {
                throw new GraphlaneException("decode throughput: a request failed: " + e.getCause().getMessage(), e.getCause());
            } catch (TimeoutException e) {
                throw new GraphlaneException("decode throughput: " + requests + " requests of " + newTokens + " tokens did not finish within "
                        + timeout, e);
            }
        }
        long end = System.nanoTime();
        long prefilled = 0;
        for (int i = 0; i < requests; i++) {
            prefilled = Math.max(prefilled, firstTokenAt.get(i));
        }
        long decodeFrom = prefilled;
        long lastToken = tokenTimes.stream().mapToLong(Long::longValue).max().orElse(end);
        int decodeTokens = (int) tokenTimes.stream().filter(t -> t > decodeFrom).count();
        return new DecodeThroughput(requests, decodeTokens, Math.max(1e-9, (lastToken - decodeFrom) / 1e9), tokens, (end - start) / 1e9);
    }
}
