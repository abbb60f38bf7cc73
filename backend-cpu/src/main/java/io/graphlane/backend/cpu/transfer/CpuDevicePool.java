package io.graphlane.backend.cpu.transfer;

import io.graphlane.backend.cpu.param.CpuStorage;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The CPU "device" tier: off-heap memory counted against a fixed budget, separately from host
 * memory. Bytes are taken when a copy is allocated and given back exactly once when its storage's
 * last reference is released; an allocation beyond the budget is refused before anything is made.
 * Thread-safe.
 */
public final class CpuDevicePool {
    private final String name;
    private final long capacityBytes;
    private final AtomicLong usedBytes = new AtomicLong();

    /** A pool named {@code name} holding at most {@code capacityBytes}. */
    public CpuDevicePool(String name, long capacityBytes) {
        this.name = Objects.requireNonNull(name, "name");
        if (capacityBytes < 0) {
            throw new IllegalArgumentException("device pool " + name + ": capacity must be >= 0 bytes, found " + capacityBytes);
        }
        this.capacityBytes = capacityBytes;
    }

    /**
     * Allocates {@code bytes} for the copy {@code owner}; they return to the pool when the storage is freed.
     *
     * @throws DeviceBudgetExceededException naming the pool, the copy, the bytes needed and free, if it does not fit
     */
    public CpuStorage allocate(String owner, long bytes) {
        while (true) {
            long used = usedBytes.get();
            if (bytes > capacityBytes - used) {
                throw new DeviceBudgetExceededException("device pool " + name + ": copy " + owner + " needs " + bytes
                        + " bytes, " + (capacityBytes - used) + " of " + capacityBytes + " are free");
            }
            if (usedBytes.compareAndSet(used, used + bytes)) {
                break;
            }
        }
        try {
            return CpuStorage.allocatePooled(owner, bytes, () -> usedBytes.addAndGet(-bytes));
        } catch (RuntimeException | OutOfMemoryError e) {
            usedBytes.addAndGet(-bytes);
            throw e;
        }
    }

    /** The pool's name. */
    public String name() {
        return name;
    }

    /** The budget in bytes. */
    public long capacityBytes() {
        return capacityBytes;
    }

    /** Bytes held by live copies now. */
    public long usedBytes() {
        return usedBytes.get();
    }

    /** Bytes still free now. */
    public long freeBytes() {
        return capacityBytes - usedBytes.get();
    }
}
