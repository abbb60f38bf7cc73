package io.graphlane.cluster.collective;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * A single-producer, single-consumer byte ring in memory that two processes map ({@link SharedMemorySegment}): one
 * thread of one process writes, one thread of the other reads. Its control block holds the producer's total of bytes
 * written and the consumer's total of bytes read (each on its own cache line, each written by one side only) and the
 * consumer's "asleep" flag; the data area is a power of two. A side publishes its total with a release store after it
 * copied the bytes, and reads the other's with an acquire load, so the bytes a total covers are visible to whoever
 * reads that total.
 *
 * <p>Sleeping: a consumer that found the ring empty sets its flag with a volatile store and then looks again; the
 * producer publishes with a volatile store and then looks at the flag. One of the two always sees the other (both
 * accesses are sequentially consistent), so a consumer never sleeps through bytes written: either it sees them on its
 * second look, or the producer sees the flag, clears it and wakes it ({@link #takeSleeper}, the caller rings).
 */
final class SharedRing {
    /** Bytes of a control block: the totals and the flag on separate cache lines, a page in all. */
    static final int CONTROL_BYTES = 4096;
    private static final int WRITTEN = 0;
    private static final int READ = 128;
    private static final int ASLEEP = 256;
    private static final VarHandle LONG = MethodHandles.byteBufferViewVarHandle(long[].class, ByteOrder.nativeOrder());
    private static final VarHandle INT = MethodHandles.byteBufferViewVarHandle(int[].class, ByteOrder.nativeOrder());

    private final ByteBuffer control;
    private final ByteBuffer data;
    private final int capacity;
    private final int mask;
    /** The producer's own total written (only the producer uses it). */
    private long written;
    /** The producer's last look at the consumer's total. */
    private long readSeen;
    /** The consumer's own total read (only the consumer uses it). */
    private long read;
    /** The consumer's last look at the producer's total. */
    private long writtenSeen;

    /**
     * The ring whose control block starts at {@code at} in {@code region} (page aligned) and whose data of
     * {@code capacity} bytes (a power of two) follows it.
     */
    SharedRing(ByteBuffer region, int at, int capacity) {
        if (Integer.bitCount(capacity) != 1) {
            throw new IllegalArgumentException("a shared ring's capacity must be a power of two, got " + capacity);
        }
        this.control = region.slice(at, CONTROL_BYTES);
        this.data = region.slice(at + CONTROL_BYTES, capacity);
        this.capacity = capacity;
        this.mask = capacity - 1;
        this.written = (long) LONG.getAcquire(control, WRITTEN);
        this.readSeen = (long) LONG.getAcquire(control, READ);
        this.read = readSeen;
        this.writtenSeen = written;
    }

    /** The bytes a ring of {@code capacity} takes in its segment: its control block and its data. */
    static long footprint(int capacity) {
        return (long) CONTROL_BYTES + capacity;
    }

    int capacity() {
        return capacity;
    }

    // ------------------------------------------------------------------ producer

    /** Copies as many of {@code src}'s remaining bytes as there is room for and publishes them; the count (0 if full). */
    int offer(ByteBuffer src) {
        long free = capacity - (written - readSeen);
        if (free == 0) {
            readSeen = (long) LONG.getAcquire(control, READ);
            free = capacity - (written - readSeen);
            if (free == 0) {
                return 0;
            }
        }
        int n = (int) Math.min(free, src.remaining());
        int at = (int) (written & mask);
        int first = Math.min(n, capacity - at);
        int from = src.position();
        data.put(at, src, from, first);
        if (first < n) {
            data.put(0, src, from + first, n - first);
        }
        src.position(from + n);
        written += n;
        LONG.setVolatile(control, WRITTEN, written);
        return n;
    }

    /** True if the consumer was asleep: the flag is cleared and the caller must wake it (exactly one producer call does). */
    boolean takeSleeper() {
        return (int) INT.getVolatile(control, ASLEEP) == 1 && INT.compareAndSet(control, ASLEEP, 1, 0);
    }

    // ------------------------------------------------------------------ consumer

    /** Copies as many published bytes as {@code dst} has room for and frees their space; the count (0 if empty). */
    int poll(ByteBuffer dst) {
        long available = writtenSeen - read;
        if (available == 0) {
            writtenSeen = (long) LONG.getAcquire(control, WRITTEN);
            available = writtenSeen - read;
            if (available == 0) {
                return 0;
            }
        }
        int n = (int) Math.min(available, dst.remaining());
        int at = (int) (read & mask);
        int first = Math.min(n, capacity - at);
        int to = dst.position();
        dst.put(to, data, at, first);
        if (first < n) {
            dst.put(to + first, data, 0, n - first);
        }
        dst.position(to + n);
        read += n;
        LONG.setRelease(control, READ, read);
        return n;
    }

    /** True if bytes are published that the consumer has not read. */
    boolean readable() {
        if (writtenSeen != read) {
            return true;
        }
        writtenSeen = (long) LONG.getAcquire(control, WRITTEN);
        return writtenSeen != read;
    }

    /**
     * The consumer is going to sleep: sets its flag, then looks again. True if the ring is still empty (sleep; the
     * producer clears the flag and wakes it once it publishes); false if bytes came meanwhile (the flag is cleared, and
     * a wake-up the producer may still send is spurious).
     */
    boolean sleep() {
        INT.setVolatile(control, ASLEEP, 1);
        writtenSeen = (long) LONG.getVolatile(control, WRITTEN);
        if (writtenSeen != read) {
            INT.compareAndSet(control, ASLEEP, 1, 0);
            return false;
        }
        return true;
    }
}
