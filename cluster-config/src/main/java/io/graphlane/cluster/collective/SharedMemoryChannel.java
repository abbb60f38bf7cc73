package io.graphlane.cluster.collective;

import java.io.IOException;
import java.io.InterruptedIOException;
import java.nio.ByteBuffer;
import java.nio.channels.ClosedChannelException;
import java.util.concurrent.locks.LockSupport;

/**
 * A payload link between two ranks on one host: the bytes travel through a {@link SharedMemorySegment}'s rings (one
 * copy in, one copy out, no system call), and the pair's socket stays up as the doorbell and the lifeline. A reader
 * that finds its ring empty sets its flag and blocks reading the socket; the writer that publishes next sends one byte
 * to wake it. The socket's end is the link's end: the peer's {@link #shutdownOutput} (after its last bytes are in the
 * ring) or its process ending closes it, and a read then returns what the ring still holds and then -1, exactly as a
 * socket would. A writer that finds the ring full (the peer's reader is behind) waits for room, polling with growing
 * pauses, until {@link #close}.
 *
 * <p>With TLS on, the socket still runs TLS: the segment's path and token were offered inside the authenticated
 * session, and only doorbells travel on it afterwards.
 */
final class SharedMemoryChannel implements PayloadChannel {
    /** Looks at an empty ring this often, pausing the core between looks, before the reader blocks on its doorbell. */
    private static final int SPINS = 64;
    /** The writer's longest pause between looks at a full ring. */
    private static final long MAX_PAUSE_NANOS = 200_000;

    private final PayloadChannel socket;
    private final SharedMemorySegment segment;
    private final SharedRing out;
    private final SharedRing in;
    /** The reader's doorbell buffer; wake-ups that pile up are read at once. */
    private final ByteBuffer bells = ByteBuffer.allocate(256);
    /** The writer's doorbell. */
    private final ByteBuffer bell = ByteBuffer.allocate(1);
    /** The socket ended (reader only): what the ring holds is the last of the stream. */
    private boolean ended;
    private volatile boolean closed;

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

    @Override
    public int read(ByteBuffer dst) throws IOException {
        while (true) {
            int n = in.poll(dst);
            if (n > 0) {
                return n;
            }
            if (ended) {
                return -1;
            }
            if (closed) {
                throw new ClosedChannelException();
            }
            if (spinUntilReadable() || !in.sleep()) {
                continue;
            }
            bells.clear();
            if (socket.read(bells) < 0) {
                ended = true;
            }
        }
    }

    private boolean spinUntilReadable() {
        for (int i = 0; i < SPINS; i++) {
            if (in.readable()) {
                return true;
            }
            Thread.onSpinWait();
        }
        return false;
    }

    @Override
    public int write(ByteBuffer src) throws IOException {
        long pause = 1_000;
        while (true) {
            if (closed) {
                throw new ClosedChannelException();
            }
            int n = out.offer(src);
            if (n > 0 || !src.hasRemaining()) {
                if (out.takeSleeper()) {
                    bell.clear();
                    bell.put((byte) 1).flip();
                    while (bell.hasRemaining()) {
                        socket.write(bell);
                    }
                }
                return n;
            }
            LockSupport.parkNanos(this, pause);
            if (Thread.interrupted()) {
                throw new InterruptedIOException("interrupted while waiting for room in the shared-memory ring to " + socket);
            }
            pause = Math.min(MAX_PAUSE_NANOS, pause * 2);
        }
    }

    @Override
    public void shutdownOutput() throws IOException {
        socket.shutdownOutput();
    }

    @Override
    public void close() throws IOException {
        closed = true;
        socket.close();
    }

    /** Unmaps the rings; only once neither the reader nor the writer uses this channel any more. */
    void release() {
        segment.unmap();
    }

    @Override
    public String toString() {
        return socket + " (shared memory)";
    }
}
