package io.graphlane.inference.llama;

import io.graphlane.core.GraphlaneException;
import io.graphlane.core.nn.NeuralOps;
import java.util.ArrayList;
import java.util.List;

/**
 * The keys and values one request has produced in one stage's layers: per layer a
 * {@code capacity × kvWidth} key and value tensor whose first {@link #length()} rows hold
 * positions {@code [0, length)}. The capacity doubles on demand, up to the positions reserved for the
 * request at admission (its prompt plus its maximum of new tokens) and never past the model's maximum
 * sequence length, so a request never holds more than admission reserved for it.
 *
 * @param <T> the backend tensor
 */
public final class KvCache<T> {
    private static final int INITIAL_CAPACITY = 64;

    private final NeuralOps<T> ops;
    private final long requestId;
    private final int kvWidth;
    private final int maxPositions;
    /** The most positions this request may hold: what admission reserved, within the model's maximum. */
    private final int limit;
    private final List<T> keys;
    private final List<T> values;
    private int capacity;
    private int length;
    private boolean released;

    /** An empty cache for {@code layerCount} layers that grows up to the model's maximum of {@code maxPositions}. */
    public KvCache(NeuralOps<T> ops, long requestId, int layerCount, int kvWidth, int maxPositions) {
        this(ops, requestId, layerCount, kvWidth, maxPositions, maxPositions);
    }

    /**
     * An empty cache for {@code layerCount} layers that grows up to {@code reservedPositions} (the positions admission
     * reserved for the request), and never past the model's maximum of {@code maxPositions}.
     */
    public KvCache(NeuralOps<T> ops, long requestId, int layerCount, int kvWidth, int maxPositions, int reservedPositions) {
        if (reservedPositions < 1) {
            throw new IllegalArgumentException("request " + requestId + ": reserved positions must be >= 1, got " + reservedPositions);
        }
        this.ops = ops;
        this.requestId = requestId;
        this.kvWidth = kvWidth;
        this.maxPositions = maxPositions;
        this.limit = Math.min(maxPositions, reservedPositions);
        this.keys = new ArrayList<>(layerCount);
        this.values = new ArrayList<>(layerCount);
        for (int l = 0; l < layerCount; l++) {
            keys.add(null);
            values.add(null);
        }
    }

    /** Positions the tensors have room for now: at most what was reserved for the request. */
    public int capacity() {
        return capacity;
    }

    /** Positions held, {@code [0, length)}. */
    public int length() {
        return length;
    }

    /** The key rows of stage-local layer {@code layer}; rows past {@link #length()} are not yet meaningful. */
    public T keys(int layer) {
        return keys.get(layer);
    }

    /** The value rows of stage-local layer {@code layer}; rows past {@link #length()} are not yet meaningful. */
    public T values(int layer) {
        return values.get(layer);
    }

    /**
     * Makes room for {@code count} more positions starting at {@code start}, which must be
     * {@link #length()}: a request's positions arrive in order, each once.
     *
     * @throws GraphlaneException naming the request and the positions if the order is broken or the
     *                            sequence would pass the model's maximum or the positions reserved for it
     */
    public void reserve(int start, int count) {
        if (released) {
            throw new IllegalStateException("KV cache of request " + requestId + " was released");
        }
        if (start != length) {
            throw new GraphlaneException("request " + requestId + ": expected position " + length + " next, got " + start
                    + " (positions reach a stage in order, each once)");
        }
        if (count < 1) {
            throw new GraphlaneException("request " + requestId + ": a step needs at least one position, got " + count);
        }
        // In long: start + count may pass Integer.MAX_VALUE (a malformed step), and must then be refused, not wrap.
        long needed = (long) start + count;
        if (needed > maxPositions) {
            throw new GraphlaneException("request " + requestId + ": " + needed + " positions exceed the model's maximum of "
                    + maxPositions + " (max_position_embeddings): " + count + " from position " + start);
        }
        if (needed > limit) {
            throw new GraphlaneException("request " + requestId + ": " + needed + " positions exceed the " + limit
                    + " reserved for it at admission (its prompt plus its maximum of new tokens): " + count + " from position " + start);
        }
        if (needed <= capacity) {
            return;
        }
        int grown = (int) Math.min(limit, Math.max(needed, Math.max(INITIAL_CAPACITY, 2L * capacity)));
        for (int l = 0; l < keys.size(); l++) {
            keys.set(l, regrow(keys.get(l), grown));
            values.set(l, regrow(values.get(l), grown));
        }
        capacity = grown;
    }

    /** Writes positions {@code [start, start + rows)} of stage-local layer {@code layer}, reserved before. */
    public void write(int layer, int start, T keyRows, T valueRows) {
        int rows = ops.rows(keyRows);
        ops.copy(keyRows, ops.rowSlice(keys.get(layer), start, start + rows));
        ops.copy(valueRows, ops.rowSlice(values.get(layer), start, start + rows));
    }

    /** Forgets every position from {@code newLength} on (no-op if the cache is shorter), so they can be computed again. */
    public void truncate(int newLength) {
        if (newLength < 0) {
            throw new IllegalArgumentException("request " + requestId + ": cannot truncate a KV cache to " + newLength + " positions");
        }
        length = Math.min(length, newLength);
    }

    /**
     * Makes positions {@code [length, length + count)} part of the cache once their rows are written.
     *
     * @throws IllegalStateException if the count is negative or passes the room reserved
     */
    public void commit(int count) {
        if (count < 0 || (long) length + count > capacity) {
            throw new IllegalStateException("request " + requestId + ": cannot commit " + count + " positions after " + length
                    + "; it has room for " + capacity);
        }
        length += count;
    }

    /** Frees every tensor of this cache, exactly once. */
    public void release() {
        if (released) {
            throw new IllegalStateException("KV cache of request " + requestId + " was already released");
        }
        released = true;
        for (int l = 0; l < keys.size(); l++) {
            if (keys.get(l) != null) {
                ops.release(keys.get(l));
                ops.release(values.get(l));
            }
        }
    }

    private T regrow(T old, int rows) {
        T grown = ops.allocate(rows, kvWidth);
        if (old != null) {
            if (length > 0) {
                ops.copy(ops.rowSlice(old, 0, length), ops.rowSlice(grown, 0, length));
            }
            ops.release(old);
        }
        return grown;
    }
}
