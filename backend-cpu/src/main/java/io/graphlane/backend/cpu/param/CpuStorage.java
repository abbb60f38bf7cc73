package io.graphlane.backend.cpu.param;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Reference-counted host bytes behind one or more {@link CpuWeight} handles. The bytes stay
 * valid while at least one reference is held; the last release runs the free action exactly
 * once (return the bytes to a pool, drop the mapped view) and later access is refused.
 *
 * <p>A {@link Kind#MAPPED_VIEW} storage is a view of memory-mapped checkpoint bytes. In Java a
 * mapping lives as long as any buffer that views it is reachable, so the view held here is the
 * weight's own pin on the mapping: the checkpoint lease that produced it can be released after the
 * materialization's completion without invalidating the weight, provided the checkpoint source never
 * unmaps a region explicitly (it leaves unmapping to reachability).
 */
public final class CpuStorage {

    /** Where the bytes live. */
    public enum Kind {
        /** A view of memory-mapped checkpoint bytes, used in place (zero copy). */
        MAPPED_VIEW,
        /** Off-heap bytes owned by this storage (a conversion, a recipe, an unaligned copy). */
        OWNED_DIRECT,
        /** Off-heap bytes counted against a budgeted pool (the CPU "device" tier). */
        POOL
    }

    /** The largest storage one CPU buffer can hold. */
    public static final long MAX_BYTES = Integer.MAX_VALUE - 128;

    private final String owner;
    private final Kind kind;
    private final long byteSize;
    private final AtomicInteger references = new AtomicInteger(1);
    private final Runnable onFree;
    private volatile ByteBuffer buffer;

    private CpuStorage(String owner, Kind kind, ByteBuffer buffer, Runnable onFree) {
        this.owner = Objects.requireNonNull(owner, "owner");
        this.kind = Objects.requireNonNull(kind, "kind");
        this.buffer = buffer.slice().order(ByteOrder.LITTLE_ENDIAN);
        this.byteSize = this.buffer.capacity();
        this.onFree = Objects.requireNonNull(onFree, "onFree");
    }

    /**
     * A storage that uses {@code view} (direct, typically memory-mapped) in place; holding it keeps the mapping alive. Its
     * pages are brought into memory now ({@link MappedPages#load}), so the first computation that reads them does not
     * wait for page faults.
     */
    public static CpuStorage mappedView(String owner, ByteBuffer view) {
        if (!view.isDirect()) {
            throw new IllegalArgumentException("storage of " + owner + ": a mapped view must be a direct buffer, got a heap buffer");
        }
        MappedPages.load(view);
        return new CpuStorage(owner, Kind.MAPPED_VIEW, view, () -> { });
    }

    /** A new zeroed, 64-byte aligned, off-heap storage of {@code byteSize} bytes owned by {@code owner}. */
    public static CpuStorage allocate(String owner, long byteSize) {
        return new CpuStorage(owner, Kind.OWNED_DIRECT, allocateAligned(owner, byteSize), () -> { });
    }

    /** A new off-heap storage whose last release runs {@code onFree} (a pool giving its bytes back). */
    public static CpuStorage allocatePooled(String owner, long byteSize, Runnable onFree) {
        return new CpuStorage(owner, Kind.POOL, allocateAligned(owner, byteSize), onFree);
    }

    private static ByteBuffer allocateAligned(String owner, long byteSize) {
        if (byteSize < 0 || byteSize > MAX_BYTES) {
            throw new IllegalArgumentException("storage of " + owner + ": " + byteSize
                    + " bytes do not fit one CPU buffer (at most " + MAX_BYTES + " bytes)");
        }
        int size = (int) byteSize;
        // alignedSlice rounds both ends inward: room for the rounded-up size plus one alignment step.
        ByteBuffer raw = ByteBuffer.allocateDirect(((size + 63) & ~63) + 64);
        return raw.alignedSlice(64).limit(size).slice();
    }

    /** What kind of memory holds the bytes. */
    public Kind kind() {
        return kind;
    }

    /** The number of bytes. */
    public long byteSize() {
        return byteSize;
    }

    /** How many handles still reference these bytes; 0 once freed. */
    public int referenceCount() {
        return references.get();
    }

    /** True once the last reference was released. */
    public boolean isFreed() {
        return references.get() == 0;
    }

    /**
     * A fresh little-endian buffer over all the bytes (writable unless the storage is a read-only view).
     *
     * @throws IllegalStateException naming the owner if the storage was freed
     */
    public ByteBuffer buffer() {
        ByteBuffer b = buffer;
        if (b == null || isFreed()) {
            throw new IllegalStateException("storage of " + owner + " was already freed");
        }
        return b.duplicate().order(ByteOrder.LITTLE_ENDIAN);
    }

    /** Adds a reference; refused once freed, since freed bytes cannot be revived. */
    CpuStorage retain() {
        while (true) {
            int n = references.get();
            if (n == 0) {
                throw new IllegalStateException("storage of " + owner + " was already freed; it cannot be shared");
            }
            if (references.compareAndSet(n, n + 1)) {
                return this;
            }
        }
    }

    /** Drops a reference; the last one frees the bytes exactly once. */
    void release() {
        while (true) {
            int n = references.get();
            if (n == 0) {
                throw new IllegalStateException("storage of " + owner + " was released more times than it was referenced");
            }
            if (references.compareAndSet(n, n - 1)) {
                if (n == 1) {
                    buffer = null;
                    onFree.run();
                }
                return;
            }
        }
    }

    @Override
    public String toString() {
        return "CpuStorage(" + owner + ", " + kind + ", " + byteSize + " bytes, refs=" + references.get() + ")";
    }
}
