package io.graphlane.inference.offload;

import java.util.List;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;

/**
 * The device copy of one streamed layer for one step: set when its promotion is submitted on the transfer lane, read
 * by the compute work ordered after that promotion's completion, and freed once, when both the promotion and the
 * reader let go of it (each holds one of its {@link #holds()}, released by its lane after its exact completion, or at
 * once if it was never submitted).
 *
 * @param <D> the device copy
 */
public final class PromotedLayer<D> {
    private final String name;
    private final Consumer<D> free;
    private final AtomicInteger holders = new AtomicInteger(2);
    private final List<Object> holds = List.of(new Hold(), new Hold());
    private volatile D copy;
    private volatile boolean freed;

    /** The layer {@code name}, whose copy {@code free} frees. */
    public PromotedLayer(String name, Consumer<D> free) {
        this.name = Objects.requireNonNull(name, "name");
        this.free = Objects.requireNonNull(free, "free");
    }

    /** The two holds: the promotion's and the reader's. */
    public List<Object> holds() {
        return holds;
    }

    /** Records the device copy the promotion makes; called once, when it is submitted. */
    public synchronized void set(D deviceCopy) {
        if (copy != null) {
            throw new IllegalStateException("layer " + name + " was promoted twice in one step");
        }
        copy = Objects.requireNonNull(deviceCopy, "deviceCopy");
        if (freed) {
            free.accept(deviceCopy); // both holders already let go: nothing will read it
        }
    }

    /**
     * The device copy, for the reader ordered after the promotion.
     *
     * @throws IllegalStateException naming the layer if its promotion was never submitted
     */
    public D get() {
        D d = copy;
        if (d == null) {
            throw new IllegalStateException("layer " + name + " is read before its promotion was submitted");
        }
        return d;
    }

    /** Whether the copy was freed. */
    public boolean isFreed() {
        return freed;
    }

    private synchronized void letGo() {
        if (holders.decrementAndGet() == 0) {
            freed = true;
            D d = copy;
            if (d != null) {
                free.accept(d);
            }
        }
    }

    @Override
    public String toString() {
        return "promoted layer " + name;
    }

    private final class Hold implements AutoCloseable {
        private final AtomicBoolean closed = new AtomicBoolean();

        @Override
        public void close() {
            if (closed.compareAndSet(false, true)) {
                letGo();
            }
        }

        @Override
        public String toString() {
            return "hold on promoted layer " + name;
        }
    }
}
