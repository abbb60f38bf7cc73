package io.graphlane.server;

import io.graphlane.inference.api.FinishReason;
import io.graphlane.inference.api.Generation;
import io.graphlane.inference.api.GenerationListener;
import io.graphlane.inference.api.GenerationRefusedException;
import io.graphlane.inference.api.GenerationRequest;
import io.graphlane.inference.api.GenerationResult;
import io.graphlane.inference.api.TokenCodec;
import io.graphlane.inference.api.TextGenerator;
import io.graphlane.scheduler.pipeline.SampledToken;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A generator for server tests: byte-level tokens, and a scripted continuation (each token is
 * {@link #next} of the previous one) produced asynchronously on its own thread, as a real
 * engine would. Refuses with OVERLOADED when {@code capacity} generations are running. Its serving
 * stats show the generation on the worker as running, the others admitted as waiting, one stage
 * ({@code stage-0}) busy one millisecond per token, and that stage's lane holding every admitted one.
 */
final class ScriptedGenerator implements TextGenerator {
    static final int EOS = 0;

    private final ExecutorService worker = Executors.newSingleThreadExecutor();
    private final AtomicInteger running = new AtomicInteger();
    /** Generations the worker has started and not yet ended. */
    final AtomicInteger onWorker = new AtomicInteger();
    private final java.util.concurrent.atomic.AtomicLong tokens = new java.util.concurrent.atomic.AtomicLong();
    private final int capacity;
    volatile Throwable failWith;
    /** While set, generations wait for it before producing tokens (so they hold their slots). */
    volatile java.util.concurrent.CountDownLatch gate;
    final AtomicInteger cancelled = new AtomicInteger();
    /** While set, the generator reports itself unavailable for this reason and refuses requests. */
    volatile String unavailable;
    /** What {@link #maxHeldRequests()} reports. */
    volatile int maxHeld = Integer.MAX_VALUE;
    /** While set, a generation given a timeout fails past it (as the engine does), unless it ended first. */
    volatile boolean honourDeadlines;
    /** While set, the worker takes this long for each token (a slow engine). */
    volatile java.time.Duration tokenInterval;
    private final java.util.concurrent.ScheduledExecutorService deadlines = Executors.newSingleThreadScheduledExecutor();

    /** While set, tokenizing waits for it (so that a request holds its preparation thread); counted down on entry. */
    volatile java.util.concurrent.CountDownLatch tokenizeGate;
    /** Counted down each time tokenizing starts. */
    volatile java.util.concurrent.CountDownLatch tokenizing = new java.util.concurrent.CountDownLatch(0);

    /** What {@link #chatTemplate()} reports; none unless a test sets one. */
    volatile io.graphlane.inference.chat.ChatTemplate chatTemplate;

    ScriptedGenerator(int capacity) {
        this.capacity = capacity;
    }

    /** The scripted successor of a token: never EOS unless the prompt asks for it. */
    static int next(int previous) {
        return previous == 1 ? EOS : (previous * 7 + 3) % 200 + 32;
    }

    static List<Integer> expected(List<Integer> prompt, int maxTokens) {
        List<Integer> out = new ArrayList<>();
        int prev = prompt.get(prompt.size() - 1);
        for (int i = 0; i < maxTokens; i++) {
            prev = next(prev);
            out.add(prev);
            if (prev == EOS) {
                break;
            }
        }
        return out;
    }

    @Override
    public String modelName() {
        return "scripted";
    }

    @Override
    public TokenCodec tokenizer() {
        return new TokenCodec() {
            @Override
            public int[] encode(String text) {
                tokenizing.countDown();
                java.util.concurrent.CountDownLatch gate = tokenizeGate;
                if (gate != null) {
                    try {
                        gate.await();
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                        throw new IllegalStateException("interrupted while held", e);
                    }
                }
                byte[] bytes = text.getBytes(StandardCharsets.UTF_8);
                int[] ids = new int[bytes.length];
                for (int i = 0; i < bytes.length; i++) {
                    ids[i] = bytes[i] & 0xff;
                }
                return ids;
            }

            @Override
            public String decode(List<Integer> ids) {
                byte[] bytes = new byte[ids.size()];
                for (int i = 0; i < bytes.length; i++) {
                    bytes[i] = (byte) (int) ids.get(i);
                }
                return new String(bytes, StandardCharsets.UTF_8);
            }

            @Override
            public int eosTokenId() {
                return EOS;
            }

            @Override
            public int maxTokenBytes() {
                return 1;
            }
        };
    }

    @Override
    public java.util.Optional<io.graphlane.inference.chat.ChatTemplate> chatTemplate() {
        return java.util.Optional.ofNullable(chatTemplate);
    }

    @Override
    public int maxSequenceLength() {
        return 64;
    }

    /** Generations running now (started and not ended or cancelled). */
    int running() {
        return running.get();
    }

    @Override
    public java.util.Optional<String> unavailableReason() {
        return java.util.Optional.ofNullable(unavailable);
    }

    @Override
    public int maxHeldRequests() {
        return maxHeld;
    }

    @Override
    public java.util.OptionalInt vocabularySize() {
        return java.util.OptionalInt.of(256);
    }

    @Override
    public Generation submit(GenerationRequest request, GenerationListener listener) {
        String why = unavailable;
        if (why != null) {
            throw new GenerationRefusedException(GenerationRefusedException.Reason.UNAVAILABLE, why);
        }
        for (int id : request.promptIds()) {
            if (id > 255) {
                throw new GenerationRefusedException(GenerationRefusedException.Reason.INVALID,
                        "token id " + id + " is outside the vocabulary [0, 256)");
            }
        }
        if (running.incrementAndGet() > capacity) {
            running.decrementAndGet();
            throw new GenerationRefusedException(GenerationRefusedException.Reason.OVERLOADED,
                    "too many requests: " + capacity + " generations are running");
        }
        CompletableFuture<GenerationResult> result = new CompletableFuture<>();
        AtomicBoolean cancel = new AtomicBoolean();
        AtomicBoolean slotHeld = new AtomicBoolean(true);
        Runnable releaseSlot = () -> {
            if (slotHeld.compareAndSet(true, false)) {
                running.decrementAndGet();
            }
        };
        java.util.concurrent.CountDownLatch waitFor = gate;
        java.time.Duration interval = tokenInterval;
        AtomicBoolean ended = new AtomicBoolean();
        if (honourDeadlines && request.timeout().isPresent()) {
            deadlines.schedule(() -> {
                if (ended.compareAndSet(false, true)) {
                    cancel.set(true);
                    releaseSlot.run();
                    RuntimeException late = new io.graphlane.scheduler.pipeline.RequestDeadlineExceededException(0, 0);
                    listener.onFailed(late);
                    result.completeExceptionally(late);
                }
            }, request.timeout().get().toNanos(), java.util.concurrent.TimeUnit.NANOSECONDS);
        }
        worker.execute(() -> {
            onWorker.incrementAndGet();
            try {
                if (waitFor != null) {
                    waitFor.await();
                }
                if (failWith != null) {
                    listener.onFailed(failWith);
                    result.completeExceptionally(failWith);
                    return;
                }
                List<Integer> out = expected(request.promptIds(), request.maxNewTokens());
                for (int t : out) {
                    if (interval != null) {
                        Thread.sleep(interval.toMillis()); // the simulated engine's time per token
                    }
                    if (cancel.get()) {
                        return;
                    }
                    tokens.incrementAndGet();
                    listener.onToken(SampledToken.of(t));
                }
                if (!ended.compareAndSet(false, true)) {
                    return;
                }
                FinishReason reason = out.get(out.size() - 1) == EOS ? FinishReason.STOP : FinishReason.LENGTH;
                listener.onFinished(reason);
                result.complete(new GenerationResult(request.promptIds(), out, reason));
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            } finally {
                releaseSlot.run();
                onWorker.decrementAndGet();
            }
        });
        return new Generation() {
            @Override
            public String id() {
                return "scripted";
            }

            @Override
            public void cancel() {
                if (cancel.compareAndSet(false, true)) {
                    cancelled.incrementAndGet();
                    releaseSlot.run();
                }
            }

            @Override
            public CompletionStage<GenerationResult> result() {
                return result;
            }
        };
    }

    /** Held slots running on the worker or waiting for it. */
    int held() {
        return running.get();
    }

    @Override
    public java.util.Optional<io.graphlane.inference.api.ServingStats> servingStats() {
        int active = onWorker.get();
        int waiting = Math.max(0, running.get() - active);
        return java.util.Optional.of(new io.graphlane.inference.api.ServingStats(active, waiting,
                List.of(new io.graphlane.inference.api.ServingStats.Stage("stage-0", tokens.get() * 1_000_000, tokens.get())),
                List.of(new io.graphlane.inference.api.ServingStats.Lane("stage-0", waiting, active))));
    }

    @Override
    public void close() {
        worker.shutdownNow();
        deadlines.shutdownNow();
    }
}
