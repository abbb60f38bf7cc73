package io.graphlane.inference.pipeline;

import io.graphlane.core.GraphlaneException;
import io.graphlane.inference.api.GenerationListener;
import io.graphlane.inference.api.GenerationRequest;
import io.graphlane.inference.api.TextGenerator;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The time to first token of one greedy request of a {@code promptTokens}-token prompt on an idle generator: the whole
 * prompt's prefill and the first token's sampling. Its prompt tokens per second is {@code promptTokens / ttft}.
 *
 * @param promptTokens the prompt's length
 * @param ttftSeconds  from submission to the first generated token
 */
public record PrefillLatency(int promptTokens, double ttftSeconds) {

    /** Prompt tokens prefilled per second. */
    public double promptTokensPerSecond() {
        return promptTokens / ttftSeconds;
    }

    /**
     * Measures {@code generator} with a prompt of {@code promptTokens} ids below 256 (every vocabulary of a byte-level
     * tokenizer or larger has them), after one untimed request of the same prompt.
     *
     * @throws GraphlaneException if the prompt is shorter than 1 token, or the request fails or outlasts {@code timeout}
     */
    public static PrefillLatency measure(TextGenerator generator, int promptTokens, Duration timeout) throws Exception {
        if (promptTokens < 1) {
            throw new GraphlaneException("prefill latency needs a prompt of >= 1 token, got " + promptTokens);
        }
        List<Integer> prompt = new ArrayList<>(promptTokens);
        for (int i = 0; i < promptTokens; i++) {
            prompt.add(1 + (i * 37) % 250);
        }
        run(generator, prompt, timeout); // warm-up: the JIT compiles the many-row path
        return new PrefillLatency(promptTokens, run(generator, prompt, timeout));
    }

    private static double run(TextGenerator generator, List<Integer> prompt, Duration timeout) throws Exception {
        AtomicLong first = new AtomicLong();
        long start = System.nanoTime();
        try {
            generator.submit(GenerationRequest.greedy(prompt, 1), new GenerationListener() {
                @Override
                public void onToken(int tokenId) {
                    first.compareAndSet(0, System.nanoTime());
                }
            }).result().toCompletableFuture().get(timeout.toNanos(), TimeUnit.NANOSECONDS);
        } catch (ExecutionException e) {
            throw new GraphlaneException("prefill latency: the request failed: " + e.getCause().getMessage(), e.getCause());
        } catch (TimeoutException e) {
            throw new GraphlaneException("prefill latency: a prompt of " + prompt.size() + " tokens did not finish within " + timeout, e);
        }
        return Math.max(1e-9, ((first.get() == 0 ? System.nanoTime() : first.get()) - start) / 1e9);
    }
}
