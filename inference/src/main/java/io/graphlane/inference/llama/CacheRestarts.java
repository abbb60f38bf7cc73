package io.graphlane.inference.llama;

import io.graphlane.core.GraphlaneException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The cache restart of a model that {@link LlamaConfig#restartsCache}, for one holder of KV caches (a whole stage, or
 * one tensor-parallel rank of a stage): which segments a step runs as ({@link LlamaConfig#restarted}), the cached
 * positions forgotten where a segment restarts from position 0, and the request's earlier token ids put in front of
 * the step's where the holder starts from token ids. A model that does not restart its cache runs every step as given.
 *
 * <p>{@link #segments} depends on the segments alone, so every stage and every rank expands a step alike, and a stage
 * after the first receives the previous stage's activation with the expanded step's rows.
 *
 * <p>The token history is safe to touch from several threads (a rank whose stage input is read on another lane than
 * its caches); each request's history is touched by one step at a time.
 */
public final class CacheRestarts {
    private final LlamaConfig config;
    /** Each request's tokens so far, kept where the holder starts from token ids (only for a model that restarts). */
    private final Map<Long, int[]> history = new ConcurrentHashMap<>();

    /** The restarts of {@code config}'s model (none unless it {@link LlamaConfig#restartsCache}). */
    public CacheRestarts(LlamaConfig config) {
        this.config = config;
    }

    /** The segments a step of {@code given} runs as: each one {@link LlamaConfig#restarted}; {@code given} itself if none restarts. */
    public List<Segment> segments(List<Segment> given) {
        if (!config.restartsCache()) {
            return given;
        }
        List<Segment> out = new ArrayList<>(given.size());
        boolean changed = false;
        for (Segment s : given) {
            Segment r = config.restarted(s);
            changed |= r != s;
            out.add(r);
        }
        return changed ? List.copyOf(out) : given;
    }

    /** Forgets the cached positions of each request whose segment in {@code run} restarts from 0 where {@code given} did not. */
    public static <T> void forgetRestarted(List<Segment> given, List<Segment> run, RequestCaches<T> caches) {
        if (given == run) {
            return;
        }
        for (int i = 0; i < given.size(); i++) {
            if (given.get(i) != run.get(i)) {
                caches.rewind(given.get(i).requestId(), 0);
            }
        }
    }

    /**
     * The token ids of a step as it runs: {@code tokenIds} of the {@code given} segments, with the earlier tokens of each
     * segment that restarts from position 0 in {@code run} put in front. Keeps each request's tokens (for a model that
     * restarts only) until {@link #end}.
     *
     * @param holder names the stage (and rank) in the error when a request starts past the tokens seen
     */
    public int[] tokens(List<Segment> given, List<Segment> run, int[] tokenIds, String holder) {
        if (!config.restartsCache()) {
            return tokenIds;
        }
        int[] out = new int[RequestCaches.positionsOf(run).length];
        int from = 0;
        int to = 0;
        for (int i = 0; i < given.size(); i++) {
            Segment g = given.get(i);
            int[] known = history.getOrDefault(g.requestId(), new int[0]);
            if (known.length < g.startPosition()) {
                throw new GraphlaneException(holder + ": request " + g.requestId() + " starts at position " + g.startPosition()
                        + ", but the stage has seen " + known.length + " of its tokens");
            }
            // from the step's start on, the history is overwritten: a step run again after a rewind replaces what followed
            int[] all = Arrays.copyOf(known, g.startPosition() + g.length());
            System.arraycopy(tokenIds, from, all, g.startPosition(), g.length());
            history.put(g.requestId(), all);
            int start = run.get(i).startPosition();
            System.arraycopy(all, start, out, to, all.length - start);
            from += g.length();
            to += all.length - start;
        }
        return out;
    }

    /** Drops the tokens kept for {@code requestId} (finished, cancelled or failed). */
    public void end(long requestId) {
        history.remove(requestId);
    }
}
