package io.graphlane.cluster.collective;

import io.graphlane.actors.wire.WireFormatException;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * A single-producer, single-consumer ring of frames in memory that two processes map ({@link SharedMemorySegment}): one
 * thread of one process writes frames, the other process reads them and frees their space, in order, once it is done
 * with them. Its control block holds the producer's total of bytes written and the consumer's total of bytes freed
 * (each on its own cache line, each written by one side only) and the consumer's "asleep" flag; the data area is a
 * power of two. A side publishes its total with a volatile store after it copied or read the bytes, and reads the
 * other's with an acquire load, so the bytes a total covers are visible to whoever reads that total.
 *
 * <p>Frames: at a position that is a multiple of 8, a 4-byte little-endian length L, then L bytes, then padding to the
 * next multiple of 8. A frame of at most {@link #contiguousLimit()} bytes in all lies in one piece, so the consumer
 * reads it where it is (a view, no copy): where it would run past the end, the producer writes the length -1 (go back
 * to the start) and puts it at position 0. A longer frame runs on across the end and is copied out in pieces.
 *
 * <p>Sleeping: a consumer that found no new frame sets its flag with a volatile store and then looks again; the
 * producer publishes with a volatile store and then looks at the flag. One of the two always sees the other (both
 * accesses are sequentially consistent), so a consumer never sleeps through a frame: either it sees it on its second
 * look, or the producer sees the flag, clears it and wakes it ({@link #takeSleeper}; the caller rings).
 */
final class SharedRing {
    /** Bytes of a control block: the totals and the flag on separate cache lines, a page in all. */
    static final int CONTROL_BYTES = 4096;
    private static final int WRITTEN = 0;
    private static final int FREED = 128;
    private static final int ASLEEP = 256;
    private static final int WRAP = -1;
    private static final VarHandle LONG = MethodHandles.byteBufferViewVarHandle(long[].class, ByteOrder.nativeOrder());
    private static final VarHandle INT = MethodHandles.byteBufferViewVarHandle(int[].class, ByteOrder.nativeOrder());

    private final ByteBuffer control;
    private final ByteBuffer data;
    private final int capacity;
    private final int mask;
    // The producer's side (its thread only).
    private long written;
    private long freedSeen;
    // The consumer's side (its reading thread only).
    private long parsed;
    private long writtenSeen;

    /**
     * The ring whose control block starts at {@code at} in {@code region} (page aligned) and whose data of
     * {@code capacity} bytes (a power of two, at least 64 KiB) follows it.
     */
    SharedRing(ByteBuffer region, int at, int capacity) {
        if (Integer.bitCount(capacity) != 1 || capacity < 1 << 16) {
            throw new IllegalArgumentException("a shared ring's capacity must be a power of two of at least 64 KiB, got " + capacity);
        }
        this.control = region.slice(at, CONTROL_BYTES);
        this.data = region.slice(at + CONTROL_BYTES, capacity).order(ByteOrder.LITTLE_ENDIAN);
        this.capacity = capacity;
        this.mask = capacity - 1;
        this.written = (long) LONG.getAcquire(control, WRITTEN);
        this.freedSeen = (long) LONG.getAcquire(control, FREED);
        this.parsed = freedSeen;
        this.writtenSeen = written;
    }

    /** The bytes a ring of {@code capacity} takes in its segment: its control block and its data. */
    static long footprint(int capacity) {
        return (long) CONTROL_BYTES + capacity;
    }

    /** The largest frame (length prefix included) that lies in one piece and is read where it is: half the ring. */
    int contiguousLimit() {
        return capacity / 2;
    }

    private static long align(long n) {
        return (n + 7) & ~7L;
    }

    // ------------------------------------------------------------------ producer

    /** Bytes the producer may write now. */
    private long room() {
        long free = capacity - (written - freedSeen);
        if (free < capacity) {
            freedSeen = (long) LONG.getAcquire(control, FREED);
            free = capacity - (written - freedSeen);
        }
        return free;
    }

    /**
     * Writes one whole frame of at most {@link #contiguousLimit()} bytes, {@code head} (its length prefix first) then
     * {@code payload} (or null), and publishes it; false, writing nothing, if there is no room for it yet.
     */
    boolean offerFrame(ByteBuffer head, ByteBuffer payload) {
        int total = head.remaining() + (payload == null ? 0 : payload.remaining());
        long size = align(total);
        int at = (int) (written & mask);
        long toEnd = capacity - at;
        long needed = size <= toEnd ? size : toEnd + size;
        if (room() < needed) {
            return false;
        }
        if (size > toEnd) {
            data.putInt(at, WRAP);
            written += toEnd;
            at = 0;
        }
        data.put(at, head, head.position(), head.remaining());
        int next = at + head.remaining();
        head.position(head.limit());
        if (payload != null) {
            data.put(next, payload, payload.position(), payload.remaining());
            payload.position(payload.limit());
        }
        written += size;
        LONG.setVolatile(control, WRITTEN, written);
        return true;
    }

    /**
     * Writes as much of a long frame's bytes ({@code src}: its length prefix first, then the rest, over one or several
     * calls) as there is room for, across the end of the ring, and publishes them; the count (0 if full). The
     * {@code first} call publishes at least the 4-byte prefix or nothing; the {@code last} part's end is padded to a
     * multiple of 8 (its last bytes wait until the padding fits too).
     */
    int offerStream(ByteBuffer src, boolean first, boolean last) {
        long free = room();
        int n = (int) Math.min(free, src.remaining());
        if (n == 0 || first && n < 4) {
            return 0;
        }
        if (last && n == src.remaining()) {
            // The padding must fit too, or the last piece waits.
            long end = align(written + n);
            if (end - written > free) {
                n = (int) Math.max(0, n - 8);
            }
        }
        int at = (int) (written & mask);
        int piece = (int) Math.min(n, capacity - at);
        int from = src.position();
        data.put(at, src, from, piece);
        if (piece < n) {
            data.put(0, src, from + piece, n - piece);
        }
        src.position(from + n);
        written += n;
        if (last && !src.hasRemaining()) {
            written = align(written);
        }
        LONG.setVolatile(control, WRITTEN, written);
        return n;
    }

    /** True if the consumer was asleep: the flag is cleared and the caller must wake it (exactly one producer call does). */
    boolean takeSleeper() {
        return (int) INT.getVolatile(control, ASLEEP) == 1 && INT.compareAndSet(control, ASLEEP, 1, 0);
    }

    // ------------------------------------------------------------------ consumer

    /** True if a frame (or part of one) is published beyond what the consumer has parsed. */
    boolean readable() {
        if (writtenSeen != parsed) {
            return true;
        }
        writtenSeen = (long) LONG.getAcquire(control, WRITTEN);
        return writtenSeen != parsed;
    }

    /**
     * The consumer is going to sleep: sets its flag, then looks again. True if nothing new is published (sleep; the
     * producer clears the flag and wakes it once it publishes); false if bytes came meanwhile (the flag is cleared, and
     * a wake-up the producer may still send is spurious).
     */
    boolean sleep() {
        INT.setVolatile(control, ASLEEP, 1);
        writtenSeen = (long) LONG.getVolatile(control, WRITTEN);
        if (writtenSeen != parsed) {
            INT.compareAndSet(control, ASLEEP, 1, 0);
            return false;
        }
        return true;
    }

    /**
     * The length of the next frame, skipping a wrap marker, or -1 if its prefix is not published yet. Only once
     * {@link #readable()}; the frame is parsed with {@link #viewBody} or {@link #copyBody}.
     *
     * @throws WireFormatException if the length is not in {@code [1, maxFrameBytes]}
     */
    int peekLength(int maxFrameBytes) {
        if (!readable()) {
            return -1;
        }
        int at = (int) (parsed & mask);
        int length = data.getInt(at);
        if (length == WRAP) {
            parsed += capacity - at;
            if (!readable()) {
                return -1;
            }
            length = data.getInt(0);
        }
        if (length <= 0 || length > maxFrameBytes) {
            throw new WireFormatException("a payload frame of " + length + " bytes in shared memory; expected 1.." + maxFrameBytes);
        }
        return length;
    }

    /** True if a frame of {@code length} body bytes lies in one piece (and is read where it is). */
    boolean contiguous(int length) {
        return 4L + length <= contiguousLimit();
    }

    /**
     * The body of the next frame, of {@code length} bytes and {@link #contiguous}, as a view of the ring (it was
     * published whole with its prefix); the position just past the frame, which {@link #freeTo} frees once the view is
     * no longer read.
     */
    ByteBuffer viewBody(int length, long[] end) {
        int at = (int) (parsed & mask);
        ByteBuffer body = data.slice(at + 4, length).order(ByteOrder.LITTLE_ENDIAN);
        parsed += align(4L + length);
        end[0] = parsed;
        return body;
    }

    /**
     * Copies what is published of the long frame being parsed into {@code dst} (its prefix skipped when
     * {@code start}); the count. The frame's padding is passed once {@code dst} is full.
     */
    int copyBody(ByteBuffer dst, boolean start) {
        if (start) {
            parsed += 4;
        }
        long available = (long) LONG.getAcquire(control, WRITTEN) - parsed;
        writtenSeen = parsed + available;
        int n = (int) Math.min(available, dst.remaining());
        int at = (int) (parsed & mask);
        int first = Math.min(n, capacity - at);
        int to = dst.position();
        dst.put(to, data, at, first);
        if (first < n) {
            dst.put(to + first, data, 0, n - first);
        }
        dst.position(to + n);
        parsed += n;
        if (!dst.hasRemaining()) {
            parsed = align(parsed);
        }
        return n;
    }

    /** The position up to which frames were parsed. */
    long parsed() {
        return parsed;
    }

    /** Frees the space of every frame before {@code position} for the producer. */
    void freeTo(long position) {
        LONG.setVolatile(control, FREED, position);
    }
}
