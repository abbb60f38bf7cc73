package io.graphlane.inference.llama;

import io.graphlane.core.GraphlaneException;
import io.graphlane.core.nn.NeuralOps;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The KV caches of every request one stage (or one shard of a stage) has seen, keyed by request id.
 * Not thread-safe: it belongs to the lane that runs the stage.
 *
 * @param <T> the backend tensor
 */
public final class RequestCaches<T> {
    private final NeuralOps<T> ops;
    private final String owner;
    private final int layerCount;
    private final int kvWidth;
    private final int maxPositions;
    private final Map<Long, KvCache<T>> caches = new HashMap<>();
    /** Positions held over every cache, as of the last change: written by the owning lane, read by anyone. */
    private volatile long positionsInUse;

    /** Caches of {@code layerCount} layers of {@code kvWidth} features, up to {@code maxPositions}; {@code owner} names the stage in errors. */
    public RequestCaches(NeuralOps<T> ops, String owner, int layerCount, int kvWidth, int maxPositions) {
        this.ops = ops;
        this.owner = owner;
        this.layerCount = layerCount;
        this.kvWidth = kvWidth;
        this.maxPositions = maxPositions;
    }

    /**
     * The cache of each segment's request, in segment order, with room reserved for the segment's positions; a request
     * seen for the first time must start at position 0, and its cache grows no further than the positions its first
     * segment says were reserved for it.
     */
    public List<KvCache<T>> reserve(List<Segment> segments) {
        List<KvCache<T>> result = new ArrayList<>(segments.size());
        for (Segment segment : segments) {
            KvCache<T> cache = caches.get(segment.requestId());
            if (cache == null) {
                if (segment.startPosition() != 0) {
                    throw new GraphlaneException(owner + ": request " + segment.requestId() + " is unknown here but starts at position "
                            + segment.startPosition() + " (a request starts at 0)");
                }
                cache = new KvCache<>(ops, segment.requestId(), layerCount, kvWidth, maxPositions, segment.reservedPositions());
                caches.put(segment.requestId(), cache);
            }
            cache.reserve(segment.startPosition(), segment.length());
            result.add(cache);
        }
        return result;
    }

    /** Frees the cache of {@code requestId}; false if there is none. */
    public boolean end(long requestId) {
        KvCache<T> cache = caches.remove(requestId);
        if (cache == null) {
            return false;
        }
        cache.release();
        publishUsage();
        return true;
    }

    /** Forgets the positions of {@code requestId} from {@code position} on; false if there is no cache for it. */
    public boolean rewind(long requestId, int position) {
        KvCache<T> cache = caches.get(requestId);
        if (cache == null) {
            return false;
        }
        cache.truncate(position);
        publishUsage();
        return true;
    }

    /** The requests that have a cache. */
    public Set<Long> requests() {
        return Set.copyOf(caches.keySet());
    }

    /**
     * The bytes one position of one request takes in these caches as they are allocated: a key and a value row of
     * {@code kvWidth} F32 features in each layer (both backends keep their caches in F32).
     */
    public long bytesPerPosition() {
        return (long) layerCount * 2 * kvWidth * Float.BYTES;
    }

    /** Positions the caches of {@code requestId} have room for now, 0 if none. */
    public int capacity(long requestId) {
        KvCache<T> cache = caches.get(requestId);
        return cache == null ? 0 : cache.capacity();
    }

    /** Positions held for {@code requestId}, 0 if none. */
    public int length(long requestId) {
        KvCache<T> cache = caches.get(requestId);
        return cache == null ? 0 : cache.length();
    }

    /** Frees every cache. */
    public void releaseAll() {
        caches.values().forEach(KvCache::release);
        caches.clear();
        publishUsage();
    }

    /** Recounts the positions held over every cache; the owner calls it after committing a step's positions. */
    public void publishUsage() {
        long total = 0;
        for (KvCache<T> cache : caches.values()) {
            total += cache.length();
        }
        positionsInUse = total;
    }

    /** Positions held over every cache as last published: safe to read from any thread. */
    public long positionsInUse() {
        return positionsInUse;
    }

    /** The position of every row of a step: each segment's positions, in segment order. */
    public static int[] positionsOf(List<Segment> segments) {
        int total = segments.stream().mapToInt(Segment::length).sum();
        int[] positions = new int[total];
        int row = 0;
        for (Segment segment : segments) {
            for (int i = 0; i < segment.length(); i++) {
                positions[row++] = segment.startPosition() + i;
            }
        }
        return positions;
    }
}
