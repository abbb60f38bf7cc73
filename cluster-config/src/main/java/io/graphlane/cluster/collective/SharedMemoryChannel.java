package io.graphlane.cluster.collective;

import java.io.IOException;
import java.io.InterruptedIOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.ClosedChannelException;
import java.util.ArrayDeque;
import java.util.concurrent.locks.LockSupport;

/**
 * The frames of a payload link between two ranks on one host: they travel through a {@link SharedMemorySegment}'s
 * rings, and the pair's socket stays up as the doorbell and the lifeline. The writer copies each frame into the ring
 * once (a chunk straight from the tensor's memory); the reader hands the frame's body on as a view of the ring, which
 * the member folds or copies straight into its output, and the frame's space goes back to the writer once every frame
 * before it is given back too ({@link #release}). So a payload byte is written once into shared memory and read once
 * from it, with no system call on the way.
 *
 * <p>Waiting: a reader that finds no frame sets its flag and blocks reading the socket; the writer that publishes next
 * sends one byte to wake it. A writer that finds the ring full (the peer's member has not given frames back) polls for
 * room with growing pauses until {@link #close}. The socket's end is the link's end: the peer's
 * {@link #shutdownOutput} (after its last frame is in the ring) or its process ending closes it, and the reader then
 * returns what the ring still holds and then the end, as a socket would.
 *
 * <p>With TLS on, the socket still runs TLS: the segment's path and token were offered inside the authenticated
 * session, and only doorbells travel on it afterwards.
 */
final class SharedMemoryChannel {
    /** Looks at an empty ring this often, pausing the core between looks, before the reader blocks on its doorbell. */
    private static final int SPINS = 64;
    /** The writer's longest pause between looks at a full ring. */
    private static final long MAX_PAUSE_NANOS = 200_000;

    /** A frame read: its body (a view of the ring, or a copy for a long frame) and the position just past it. */
    record Frame(ByteBuffer body, long end) {
    }

    private final PayloadChannel socket;
    private final SharedMemorySegment segment;
    private final SharedRing out;
    private final SharedRing in;
    /** The reader's doorbell buffer; wake-ups that pile up are read at once. */
    private final ByteBuffer bells = ByteBuffer.allocate(256);
    /** The writer's doorbell. */
    private final ByteBuffer bell = ByteBuffer.allocate(1);
    /** Frames read and not yet freed, oldest first: {end, given back (1) or not (0)}. Guarded by itself. */
    private final ArrayDeque<long[]> unfreed = new ArrayDeque<>();
    /** How far a long frame being copied out is copied (its bytes there may be freed once no frame before it is held), or -1. */
    private long copiedTo = -1;
    /** The socket ended (reader only): what the ring holds is the last of the stream. */
    private boolean ended;
    private volatile boolean closed;
    /** The writer waits for room in a full ring (for tests and diagnostics). */
    private volatile boolean awaitingRoom;

    /**
     * The link over {@code segment} and {@code socket}; {@code lower} is true on the lower rank of the pair (it writes
     * the upward ring and reads the other).
     */
    SharedMemoryChannel(PayloadChannel socket, SharedMemorySegment segment, boolean lower) {
        this.socket = socket;
        this.segment = segment;
        this.out = segment.ring(lower);
        this.in = segment.ring(!lower);
    }

    // ------------------------------------------------------------------ the writer's thread

    /**
     * Writes one frame, {@code head} (its 4-byte little-endian length first) then {@code payload} (or null), waiting for
     * room as long as the ring is full, and wakes the reader if it sleeps.
     *
     * @throws ClosedChannelException once the channel is closed
     */
    void writeFrame(ByteBuffer head, ByteBuffer payload) throws IOException {
        if (payload != null && !payload.hasRemaining()) {
            payload = null;
        }
        long total = head.remaining() + (payload == null ? 0L : payload.remaining());
        long pause = 1_000;
        if (total <= out.contiguousLimit()) {
            while (!out.offerFrame(head, payload)) {
                pause = awaitRoom(pause);
            }
        } else {
            ByteBuffer[] parts = payload == null ? new ByteBuffer[] {head} : new ByteBuffer[] {head, payload};
            boolean first = true;
            for (int p = 0; p < parts.length; p++) {
                while (parts[p].hasRemaining()) {
                    if (out.offerStream(parts[p], first, p == parts.length - 1) == 0) {
                        pause = awaitRoom(pause);
                    } else {
                        first = false;
                        wake();
                    }
                }
            }
        }
        if (awaitingRoom) {
            awaitingRoom = false; // written only after a wait, so a frame that found room costs no volatile store
        }
        wake();
    }

    /** True while the writer waits for room in a full ring. */
    boolean awaitsRoom() {
        return awaitingRoom;
    }

    private long awaitRoom(long pause) throws IOException {
        if (closed) {
            throw new ClosedChannelException();
        }
        awaitingRoom = true;
        LockSupport.parkNanos(this, pause);
        if (Thread.interrupted()) {
            throw new InterruptedIOException("interrupted while waiting for room in the shared-memory ring to " + socket);
        }
        if (closed) {
            throw new ClosedChannelException();
        }
        return Math.min(MAX_PAUSE_NANOS, pause * 2);
    }

    private void wake() throws IOException {
        if (out.takeSleeper()) {
            bell.clear();
            bell.put((byte) 1).flip();
            while (bell.hasRemaining()) {
                socket.write(bell);
            }
        }
    }

    /** Ends this side's stream once its frames are in the ring: the peer's reader returns them, then the end. */
    void shutdownOutput() throws IOException {
        socket.shutdownOutput();
    }

    // ------------------------------------------------------------------ the reader's thread

    /**
     * The next frame, waiting for it; null at the end of the stream. The caller {@link #release releases} every frame
     * it got, once nothing reads its body any more.
     *
     * @throws io.graphlane.actors.wire.WireFormatException if a frame declares a length outside {@code [1, maxFrameBytes]}
     * @throws IOException if the stream ends in the middle of a frame, or the channel is closed
     */
    Frame readFrame(int maxFrameBytes) throws IOException {
        while (true) {
            int length = in.peekLength(maxFrameBytes);
            if (length > 0) {
                if (in.contiguous(length)) {
                    long[] end = new long[1];
                    ByteBuffer body = in.viewBody(length, end);
                    hold(end[0]);
                    return new Frame(body, end[0]);
                }
                ByteBuffer body = ByteBuffer.allocate(length).order(ByteOrder.LITTLE_ENDIAN);
                boolean start = true;
                while (body.hasRemaining()) {
                    int n = in.copyBody(body, start);
                    start = false;
                    if (n == 0 && body.hasRemaining()) {
                        // What is copied out may be overwritten: a frame longer than the free ring needs it.
                        copied(in.parsed());
                        awaitBytes();
                        if (ended && !in.readable()) {
                            throw new IOException("the shared-memory stream from " + socket + " ended in the middle of a frame");
                        }
                    }
                }
                synchronized (unfreed) {
                    copiedTo = -1;
                    unfreed.add(new long[] {in.parsed(), 0});
                }
                return new Frame(body.flip(), in.parsed());
            }
            if (ended) {
                return null;
            }
            awaitBytes();
        }
    }

    private void awaitBytes() throws IOException {
        if (closed) {
            throw new ClosedChannelException();
        }
        for (int i = 0; i < SPINS; i++) {
            if (in.readable()) {
                return;
            }
            Thread.onSpinWait();
        }
        if (!in.sleep()) {
            return;
        }
        bells.clear();
        if (socket.read(bells) < 0) {
            ended = true;
        }
    }

    /** The long frame being copied out is copied up to {@code position}: freed at once unless a frame before it is held. */
    private void copied(long position) {
        synchronized (unfreed) {
            copiedTo = position;
            if (unfreed.isEmpty()) {
                in.freeTo(position);
            }
        }
    }

    private void hold(long end) {
        synchronized (unfreed) {
            unfreed.add(new long[] {end, 0});
        }
    }

    /**
     * Nothing reads the frame that ends at {@code end} any more: its space, and that of every frame before it given back
     * already, goes back to the writer. Any thread; each frame once.
     */
    void release(long end) {
        synchronized (unfreed) {
            for (long[] f : unfreed) {
                if (f[0] == end) {
                    f[1] = 1;
                    break;
                }
            }
            long freeTo = -1;
            while (!unfreed.isEmpty() && unfreed.peekFirst()[1] == 1) {
                freeTo = unfreed.pollFirst()[0];
            }
            if (unfreed.isEmpty() && copiedTo > freeTo) {
                freeTo = copiedTo;
            }
            if (freeTo >= 0) {
                in.freeTo(freeTo);
            }
        }
    }

    // ------------------------------------------------------------------ either

    /** Closes the socket at once; a reader or writer waiting on this channel fails. */
    void close() throws IOException {
        closed = true;
        socket.close();
    }

    /**
     * Unmaps the rings; only once nothing reads or writes them any more (the link's reader and writer threads have
     * ended and no frame body is held).
     */
    void unmap() {
        segment.unmap();
    }

    @Override
    public String toString() {
        return socket + " (shared memory)";
    }
}
