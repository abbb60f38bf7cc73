package io.graphlane.backend.gpu;

import java.util.ArrayDeque;
import java.util.Deque;
import java.util.HashMap;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.Executor;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.LongFunction;
import java.util.function.ToLongFunction;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Reuses page-locked host buffers instead of allocating and freeing one per copy: allocating
 * ({@code cuMemHostAlloc}) and freeing ({@code cuMemFreeHost}, which synchronizes the whole device)
 * per decode step would stall every lane. A lease hands out a buffer of the next power-of-two size
 * (at least {@value #MIN_BYTES} bytes); closing the lease only puts the buffer back on its size's free
 * list, so it is cheap on any thread, the event poller's included. Idle buffers beyond
 * {@code maxIdleBytes}, and every buffer once the pool is closed, are freed on {@code freer}, never on
 * the thread that returned them.
 *
 * @param <B> the buffer type ({@link PinnedBuffer} on a device)
 */
public final class HostBufferPool<B> implements AutoCloseable {
    /** The smallest size class: small copies (one row of logits) share 4 KiB buffers. */
    public static final long MIN_BYTES = 4096;
    private static final Logger LOG = LoggerFactory.getLogger(HostBufferPool.class);

    private final String name;
    private final LongFunction<B> allocate;
    private final ToLongFunction<B> capacity;
    private final Consumer<B> free;
    private final Executor freer;
    private final long maxIdleBytes;
    private final Map<Long, Deque<B>> idle = new HashMap<>();
    private long idleBytes;
    private long allocations;
    private boolean closed;

    /**
     * A pool named {@code name} (for messages) that allocates with {@code allocate(bytes)}, reads a buffer's size with
     * {@code capacity}, frees with {@code free} on {@code freer}, and keeps at most {@code maxIdleBytes} of idle buffers.
     */
    public HostBufferPool(String name, LongFunction<B> allocate, ToLongFunction<B> capacity, Consumer<B> free, Executor freer,
                          long maxIdleBytes) {
        this.name = Objects.requireNonNull(name, "name");
        this.allocate = Objects.requireNonNull(allocate, "allocate");
        this.capacity = Objects.requireNonNull(capacity, "capacity");
        this.free = Objects.requireNonNull(free, "free");
        this.freer = Objects.requireNonNull(freer, "freer");
        if (maxIdleBytes < 0) {
            throw new IllegalArgumentException("maxIdleBytes of " + name + " must be >= 0, got " + maxIdleBytes);
        }
        this.maxIdleBytes = maxIdleBytes;
    }

    /** The size class of a request of {@code bytes}: the next power of two, at least {@link #MIN_BYTES}. */
    static long sizeClass(long bytes) {
        if (bytes < 0) {
            throw new IllegalArgumentException("a host buffer of " + bytes + " bytes");
        }
        long size = Math.max(MIN_BYTES, bytes);
        long power = Long.highestOneBit(size);
        return power == size ? size : Math.multiplyExact(power, 2L);
    }

    /** A buffer of at least {@code bytes}: an idle one of its size class, else a new one. */
    public Lease acquire(long bytes) {
        long size = sizeClass(bytes);
        synchronized (idle) {
            if (closed) {
                throw new IllegalStateException("the host buffer pool of " + name + " is closed");
            }
            Deque<B> free = idle.get(size);
            if (free != null && !free.isEmpty()) {
                idleBytes -= size;
                return new Lease(free.pop(), size);
            }
            allocations++;
        }
        return new Lease(allocate.apply(size), size);
    }

    /** How many buffers were allocated so far (a reused buffer is not counted again). */
    public long allocations() {
        synchronized (idle) {
            return allocations;
        }
    }

    /** The bytes of the buffers idle in the pool now. */
    public long idleBytes() {
        synchronized (idle) {
            return idleBytes;
        }
    }

    /** Frees every idle buffer on the freer; buffers still leased are freed on the freer when their lease closes. */
    @Override
    public void close() {
        Map<Long, Deque<B>> drained;
        synchronized (idle) {
            if (closed) {
                return;
            }
            closed = true;
            drained = new HashMap<>(idle);
            idle.clear();
            idleBytes = 0;
        }
        drained.values().forEach(buffers -> buffers.forEach(this::freeLater));
    }

    private void giveBack(B buffer, long size) {
        synchronized (idle) {
            if (!closed && idleBytes + size <= maxIdleBytes) {
                idle.computeIfAbsent(size, s -> new ArrayDeque<>()).push(buffer);
                idleBytes += size;
                return;
            }
        }
        freeLater(buffer);
    }

    private void freeLater(B buffer) {
        freer.execute(() -> {
            try {
                free.accept(buffer);
            } catch (RuntimeException e) {
                LOG.warn("freeing a host buffer of {} failed", name, e);
            }
        });
    }

    /** One use of a pooled buffer; closing it (once) returns the buffer to the pool. */
    public final class Lease implements AutoCloseable {
        private final B buffer;
        private final long size;
        private final AtomicBoolean returned = new AtomicBoolean();

        private Lease(B buffer, long size) {
            this.buffer = buffer;
            this.size = size;
            if (capacity.applyAsLong(buffer) < size) {
                throw new IllegalStateException("the host buffer pool of " + name + " got a buffer of " + capacity.applyAsLong(buffer)
                        + " bytes for the size class " + size);
            }
        }

        /** The buffer (at least as large as requested); do not use it after {@link #close}. */
        public B buffer() {
            if (returned.get()) {
                throw new IllegalStateException("a host buffer lease of " + name + " was already returned");
            }
            return buffer;
        }

        /** Returns the buffer to the pool; later calls do nothing. */
        @Override
        public void close() {
            if (returned.compareAndSet(false, true)) {
                giveBack(buffer, size);
            }
        }
    }
}
