package io.graphlane.server;

import io.graphlane.inference.api.FinishReason;
import io.graphlane.inference.api.Generation;
import io.graphlane.inference.api.GenerationListener;
import io.graphlane.inference.api.TokenCodec;
import io.graphlane.inference.tokenizer.StreamingDecoder;
import io.graphlane.scheduler.pipeline.SampledToken;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.function.Consumer;

/**
 * One choice being generated: turns its generation's tokens into the text a client may see, applying the stop
 * strings (text ends before the first; nothing of a stop string's beginning is released before it is known not to
 * match), the stop token ids, the echo of the prompt and the log-probabilities. Both the streamed and the whole
 * response read it: each call returns the {@link Piece} to send now, and once the choice ended the totals.
 *
 * <p>What is reported: {@code tokenIds} are the prompt's ids when echoed, then every generated token up to and
 * including the one that ended the choice (the one that completed a stop string, a stop token, the end-of-sequence
 * token); {@code text} is the echoed prompt's decoded text, then the decoded generated tokens cut before the first
 * stop string. So the text is always a prefix of the decoded token ids, exactly that when no stop string matched.
 * The streamed pieces add up to the same text and ids.
 *
 * <p>A choice that ends on a stop string or stop token cancels its generation at once, so its engine slot frees
 * once the step in flight, if any, returns (that step's token is discarded). Callbacks of one generation come in
 * order; the lock only makes the attach of the generation handle safe against them.
 */
final class CompletionChoice {

    /** What one event of a choice adds; {@code finishReason} is set on its last piece. */
    record Piece(String text, List<Integer> tokenIds, List<LogprobsBuilder.Entry> logprobs, String finishReason) {
    }

    private final TokenCodec codec;
    private final List<Integer> promptIds;
    private final boolean echo;
    private final StreamingDecoder decoder;
    private final StopMatcher matcher;
    private final Set<Integer> stopTokenIds;
    private final LogprobsBuilder logprobs;
    private final StringBuilder text = new StringBuilder();
    private final List<Integer> tokenIds = new ArrayList<>();
    private int generated;
    /** Where the next generated token's text begins in this choice's text. */
    private int textOffset;
    private String finishReason;
    private boolean failed;
    private boolean cancelWanted;
    private ServerMetrics.Request metered;
    private Generation generation;

    /** A choice whose text is {@code codec}'s plain decoding of its tokens (special tokens included), as completions show it. */
    CompletionChoice(TokenCodec codec, GenerationOptions options, List<Integer> promptIds, boolean echo) {
        this(codec, codec.streamingDecoder(), options, promptIds, echo);
    }

    /**
     * A choice whose generated text comes from {@code decoder} (chat gives the content decoder, which leaves special
     * tokens out); the echoed prompt and the log-probabilities' token texts are {@code codec}'s plain decoding.
     */
    CompletionChoice(TokenCodec codec, StreamingDecoder decoder, GenerationOptions options, List<Integer> promptIds, boolean echo) {
        this.codec = codec;
        this.promptIds = List.copyOf(promptIds);
        this.echo = echo;
        this.decoder = decoder;
        this.matcher = new StopMatcher(options.stop());
        this.stopTokenIds = options.stopTokenIds();
        this.logprobs = options.wantsLogprobs() ? new LogprobsBuilder(codec) : null;
    }

    /** The echoed prompt as the choice's first piece, or null without echo. */
    synchronized Piece start() {
        if (!echo) {
            return null;
        }
        String prompt = codec.decode(promptIds);
        text.append(prompt);
        tokenIds.addAll(promptIds);
        textOffset = prompt.length();
        return new Piece(prompt, promptIds, List.of(), null);
    }

    /** The metrics of this choice's request, told before its first token so a stop counts as a finish. */
    synchronized void observe(ServerMetrics.Request request) {
        metered = request;
    }

    /** The generation's handle; cancelled at once if the choice already ended on a stop. */
    synchronized void attach(Generation g) {
        generation = g;
        if (cancelWanted) {
            stopGeneration();
        }
    }

    /** The next generated token; null once the choice ended (a token computed before the cancel took effect). */
    synchronized Piece token(SampledToken token) {
        if (ended()) {
            return null;
        }
        generated++;
        tokenIds.add(token.id());
        List<LogprobsBuilder.Entry> entries = logprobs == null ? List.of() : List.of(logprobs.add(token, textOffset));
        String decoded = decoder.next(token.id());
        textOffset += decoded.length();
        String shown = matcher.offer(decoded);
        boolean stopToken = !matcher.stopped() && stopTokenIds.contains(token.id());
        if (stopToken) {
            shown += releaseRest();
        }
        text.append(shown);
        if (matcher.stopped() || stopToken) {
            return endByStop(shown, token.id(), entries);
        }
        return new Piece(shown, List.of(token.id()), entries, null);
    }

    /** The generation ended by itself; the last piece (the text held back), or null if the choice ended before. */
    synchronized Piece finish(FinishReason reason) {
        if (ended()) {
            return null;
        }
        String rest = releaseRest();
        text.append(rest);
        finishReason = matcher.stopped() ? "stop" : reason.openAiName();
        return new Piece(rest, List.of(), List.of(), finishReason);
    }

    /** The generation failed: true when that ends this choice (false when it had ended already, e.g. by its own cancel). */
    synchronized boolean fail() {
        if (ended()) {
            return false;
        }
        failed = true;
        return true;
    }

    synchronized boolean ended() {
        return finishReason != null || failed;
    }

    synchronized String text() {
        return text.toString();
    }

    synchronized List<Integer> tokenIds() {
        return List.copyOf(tokenIds);
    }

    /** The tokens generated for this choice (its share of {@code completion_tokens}). */
    synchronized int generatedTokens() {
        return generated;
    }

    synchronized String finishReason() {
        return finishReason;
    }

    /** The log-probability entries of the generated tokens, or null when not asked for. */
    synchronized List<LogprobsBuilder.Entry> logprobs() {
        return logprobs == null ? null : logprobs.entries();
    }

    /**
     * The listener of this choice's generation: each piece it makes goes to {@code send} (null pieces are dropped), and
     * {@code ended} runs once, when the choice ended: with null after its last piece, or with the generation's failure.
     * The echo ({@link #start()}) is the caller's to send before.
     */
    GenerationListener listener(Consumer<Piece> send, Consumer<Throwable> ended) {
        return new GenerationListener() {
            @Override
            public void onToken(SampledToken token) {
                deliver(token(token));
            }

            @Override
            public void onFinished(FinishReason reason) {
                deliver(finish(reason));
            }

            @Override
            public void onFailed(Throwable cause) {
                if (fail()) {
                    ended.accept(cause);
                }
            }

            private void deliver(Piece piece) {
                if (piece == null) {
                    return;
                }
                send.accept(piece);
                if (piece.finishReason() != null) {
                    ended.accept(null);
                }
            }
        };
    }

    /** The listener of a choice answered whole: {@code done} completes when the choice ended, exceptionally if it failed. */
    GenerationListener listener(CompletableFuture<Void> done) {
        return listener(piece -> { }, failure -> {
            if (failure == null) {
                done.complete(null);
            } else {
                done.completeExceptionally(failure);
            }
        });
    }

    /** What the decoder and the matcher still hold, as far as no stop string ends it. */
    private String releaseRest() {
        String rest = matcher.offer(decoder.flush());
        return matcher.stopped() ? rest : rest + matcher.flush();
    }

    /** Ends the generation because a stop matched: a finish on a stop for the metrics, a cancel for the engine. */
    private void stopGeneration() {
        if (metered != null) {
            metered.stopMatched();
        }
        if (generation != null) {
            generation.cancel();
        }
    }

    private Piece endByStop(String shown, int tokenId, List<LogprobsBuilder.Entry> entries) {
        finishReason = "stop";
        cancelWanted = true;
        stopGeneration();
        return new Piece(shown, List.of(tokenId), entries, finishReason);
    }
}
