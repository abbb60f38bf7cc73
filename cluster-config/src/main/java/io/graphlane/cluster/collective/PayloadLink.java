package io.graphlane.cluster.collective;

import io.graphlane.actors.wire.WireFormatException;
import io.graphlane.backend.cpu.collective.CollectiveMessage;
import io.graphlane.backend.cpu.collective.CollectiveTransport.Envelope;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.Semaphore;
import io.graphlane.cluster.collective.SocketPayloadPlane.Frame;

/** One pair's socket of a {@link SocketPayloadPlane}, its writer queue and its reader. */
final class PayloadLink {
    private final SocketPayloadPlane plane;

    /**
     * A received chunk the member holds: the buffer it was read into and the view of its floats the member was given;
     * over shared memory, the end of its frame in the ring (else -1).
     */
    private record Held(ByteBuffer body, java.nio.FloatBuffer values, long end) {
    }

    final int peer;
    final LinkedBlockingQueue<Frame> queue = new LinkedBlockingQueue<>();
    /** Send frames of the group's chunk frame, written and free for the next chunk. */
    final ArrayBlockingQueue<ByteBuffer> pool;
    /** Headers of chunks written from their sender's memory, written and free for the next chunk. */
    final ArrayBlockingQueue<ByteBuffer> heads;
    /** The ticket of the last frame queued with a payload in its sender's memory (0: none yet). */
    volatile long lastQueued;
    /** The ticket up to which such frames are written (or dropped). */
    volatile long lastWritten;
    /** The ticket of the frame whose payload the writer is writing now, or 0. */
    volatile long writingTicket;
    /** Frames with tickets up to this one are dropped instead of written (their sender failed). */
    volatile long withdrawnUpTo;
    /** The member's thread while it waits for {@link #lastWritten}. */
    volatile Thread sentWaiter;
    /** Receive buffers of the group's chunk frame that the member gave back. */
    final ArrayBlockingQueue<ByteBuffer> received;
    /** The chunks handed to the member and not given back yet, in arrival order. */
    final java.util.concurrent.ConcurrentLinkedQueue<Held> held = new java.util.concurrent.ConcurrentLinkedQueue<>();
    /** Receive buffers the reader may still fill: it takes one before each frame. */
    final Semaphore window;
    final CompletableFuture<Void> finished = new CompletableFuture<>();
    volatile PayloadChannel channel;
    /** The frames' path when both ranks share a host: the segment's rings, with {@link #channel} as doorbell; else null. */
    volatile SharedMemoryChannel shared;
    volatile Thread writer;
    volatile Thread reader;
    volatile boolean peerSaidGoodbye;
    volatile boolean writerEnded;
    volatile boolean linkAborted;
    private boolean goodbyeQueued;
    private boolean writerDone;
    private boolean readerDone;

    PayloadLink(SocketPayloadPlane plane, int peer) {
        this.plane = plane;
        this.peer = peer;
        this.pool = new ArrayBlockingQueue<>(plane.window);
        this.heads = new ArrayBlockingQueue<>(2 * plane.window);
        this.received = new ArrayBlockingQueue<>(plane.window);
        this.window = new Semaphore(plane.window);
    }

    /**
     * Starts reading {@code ch}, or {@code shared} when it is not null; false (and the socket closed) if the link was
     * aborted meanwhile.
     */
    boolean attach(PayloadChannel ch, SharedMemoryChannel shared) {
        synchronized (this) {
            channel = ch;
            this.shared = shared;
            if (linkAborted || plane.aborted) {
                readerDone = true;
                SocketPayloadPlane.closeQuietly(ch);
                return false;
            }
            reader = new Thread(shared == null ? this::readLoop : this::readLoopShared, plane.threadName(peer, "from"));
            reader.setDaemon(true);
        }
        reader.start();
        return true;
    }

    synchronized void enqueue(Frame frame) {
        if (goodbyeQueued || linkAborted) {
            return;
        }
        queue.add(frame);
    }

    /** Queues a chunk's header and its floats, to be written from where they are, under the next ticket. */
    synchronized void enqueuePayload(ByteBuffer head, ByteBuffer payload) {
        if (goodbyeQueued || linkAborted) {
            return;
        }
        long ticket = lastQueued + 1;
        queue.add(new Frame(head, heads, false, payload, ticket));
        lastQueued = ticket;
    }

    /** True once the frames up to {@code ticket} are written or dropped, or the writer has ended; false at {@code deadline}. */
    boolean awaitWritten(long ticket, long deadline) throws InterruptedException {
        if (lastWritten >= ticket) {
            return true;
        }
        sentWaiter = Thread.currentThread();
        try {
            while (lastWritten < ticket) {
                if (linkAborted || writerEnded) {
                    return awaitWriterEnd(deadline);
                }
                long left = deadline - System.nanoTime();
                if (left <= 0) {
                    return false;
                }
                java.util.concurrent.locks.LockSupport.parkNanos(this, left);
                if (Thread.interrupted()) {
                    throw new InterruptedException();
                }
            }
            return true;
        } finally {
            sentWaiter = null;
        }
    }

    /** True once this link's writer thread has ended (so it reads no payload any more); false at {@code deadline}. */
    boolean awaitWriterEnd(long deadline) {
        Thread w = writer;
        if (w == null || w == Thread.currentThread() || writingTicket == 0) {
            return true;
        }
        try {
            long left = deadline - System.nanoTime();
            if (left > 0) {
                w.join(Math.max(1, left / 1_000_000));
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        return !w.isAlive() || writingTicket == 0;
    }

    /** The frame's payload is written (or dropped): its header goes back to the pool and a waiting member hears of it. */
    private void payloadDone(Frame f) {
        writingTicket = 0;
        lastWritten = f.ticket();
        heads.offer(f.bytes());
        Thread waiting = sentWaiter;
        if (waiting != null) {
            java.util.concurrent.locks.LockSupport.unpark(waiting);
        }
    }

    synchronized void queueGoodbye() {
        if (goodbyeQueued || linkAborted) {
            return;
        }
        goodbyeQueued = true;
        ByteBuffer frame = ByteBuffer.allocate(64).order(ByteOrder.LITTLE_ENDIAN);
        frame.position(4);
        plane.serializer.toBinary(new CollectiveRankActor.Goodbye(plane.rank), frame);
        frame.putInt(0, frame.position() - 4);
        frame.flip();
        queue.add(new Frame(frame, null, true));
    }

    void writeLoop() {
        PayloadChannel ch = channel;
        SharedMemoryChannel sh = shared;
        try {
            while (!linkAborted) {
                Frame f = queue.take();
                ByteBuffer bytes = f.bytes();
                if (f.payload() != null) {
                    writingTicket = f.ticket();
                    if (f.ticket() > withdrawnUpTo) {
                        if (sh != null) {
                            sh.writeFrame(bytes, f.payload());
                        } else {
                            writeAll(ch, bytes);
                            writeAll(ch, f.payload());
                        }
                    }
                    payloadDone(f);
                    continue;
                }
                if (sh != null) {
                    sh.writeFrame(bytes, null);
                } else {
                    writeAll(ch, bytes);
                }
                if (f.pool() != null) {
                    f.pool().offer(bytes);
                }
                if (f.goodbye()) {
                    ch.shutdownOutput();
                    break;
                }
            }
        } catch (InterruptedException e) {
            // Aborted.
        } catch (IOException e) {
            if (!linkAborted && !plane.aborted && !peerSaidGoodbye) {
                plane.status.lost(peer, "writing to its payload socket to node " + plane.nodeOf(peer, ch) + " failed: " + e);
            }
            abort();
        }
        writingTicket = 0;
        writerEnded = true;
        Thread waiting = sentWaiter;
        if (waiting != null) {
            java.util.concurrent.locks.LockSupport.unpark(waiting);
        }
        done(true);
    }

    private void writeAll(PayloadChannel ch, ByteBuffer bytes) throws IOException {
        while (bytes.hasRemaining()) {
            ch.write(bytes);
        }
    }

    void readLoop() {
        PayloadChannel ch = channel;
        ByteBuffer header = ByteBuffer.allocate(4).order(ByteOrder.LITTLE_ENDIAN);
        String failure = null;
        try {
            while (true) {
                header.clear();
                if (!readFully(ch, header, true)) {
                    if (!peerSaidGoodbye) {
                        failure = "its payload socket from node " + plane.nodeOf(peer, ch) + " closed before it said goodbye";
                    }
                    break;
                }
                int length = header.getInt(0);
                if (length <= 0 || length > plane.maxFrameBytes) {
                    throw new WireFormatException("a payload frame of " + length + " bytes; expected 1.." + plane.maxFrameBytes);
                }
                window.acquire();
                ByteBuffer body = receiveBuffer(length);
                body.limit(length);
                if (!readFully(ch, body, false)) {
                    throw new IOException("the socket closed in the middle of a frame");
                }
                body.flip();
                deliver(plane.serializer.fromBinaryViewing(body), body, -1);
            }
        } catch (InterruptedException e) {
            // Aborted.
        } catch (IOException | WireFormatException e) {
            if (!peerSaidGoodbye) {
                failure = "its payload socket from node " + plane.nodeOf(peer, ch) + " failed: " + e;
            }
        }
        readerEnded(failure);
    }

    /**
     * Hands a frame's message on: a chunk to the member, which reads its floats straight from {@code body} and gives
     * it back once it has; anything else is decoded already, so its body is freed at once. {@code end} is the frame's
     * end in the shared ring, or -1 for a socket's receive buffer.
     */
    private void deliver(Object message, ByteBuffer body, long end) {
        if (message instanceof CollectiveRankActor.Deliver d && d.from() == peer) {
            if (d.message() instanceof CollectiveMessage.Chunk c) {
                held.add(new Held(body, c.values(), end));
            } else {
                free(body, end);
            }
            plane.inbox.add(new Envelope(peer, d.message()));
        } else if (message instanceof CollectiveRankActor.Goodbye g && g.from() == peer) {
            free(body, end);
            peerSaidGoodbye = true;
            plane.status.depart(peer);
            queueGoodbye();
        } else {
            throw new WireFormatException("a payload frame holding " + message + ", expected a message from rank " + peer);
        }
    }

    /** A frame's body is read no more: its buffer back to the pool, or its space in the ring back to the writer. */
    private void free(ByteBuffer body, long end) {
        if (end < 0) {
            recycle(body);
        } else {
            shared.release(end);
            window.release();
        }
    }

    /** The reader's last word: a failure (if any, and the link was not aborted) reports the peer lost. */
    private void readerEnded(String failure) {
        if (failure != null && !linkAborted && !plane.aborted) {
            plane.status.lost(peer, failure);
            abort();
        }
        done(false);
    }

    /**
     * The reader of a link through shared memory: as {@link #readLoop}, but each frame's body is a view of the ring
     * (no copy), a chunk's until the member gives it back, any other frame's until it is decoded.
     */
    void readLoopShared() {
        SharedMemoryChannel sh = shared;
        String failure = null;
        try {
            while (true) {
                window.acquire();
                SharedMemoryChannel.Frame frame = sh.readFrame(plane.maxFrameBytes);
                if (frame == null) {
                    window.release();
                    if (!peerSaidGoodbye) {
                        failure = "its payload socket from node " + plane.nodeOf(peer, channel) + " closed before it said goodbye";
                    }
                    break;
                }
                deliver(plane.serializer.fromBinaryViewing(frame.body()), frame.body(), frame.end());
            }
        } catch (InterruptedException e) {
            // Aborted.
        } catch (IOException | WireFormatException e) {
            if (!peerSaidGoodbye) {
                failure = "its payload socket from node " + plane.nodeOf(peer, channel) + " failed: " + e;
            }
        }
        readerEnded(failure);
    }

    /** A cleared buffer for a frame of {@code length} bytes: a pooled direct one for a frame up to a chunk's, else its own. */
    private ByteBuffer receiveBuffer(int length) {
        if (length > plane.chunkFrameBytes) {
            return ByteBuffer.allocate(length).order(ByteOrder.LITTLE_ENDIAN);
        }
        ByteBuffer b = received.poll();
        if (b == null) {
            b = ByteBuffer.allocateDirect(plane.chunkFrameBytes).order(ByteOrder.LITTLE_ENDIAN);
        }
        b.clear();
        return b;
    }

    /** {@code body} is free again: pooled if it is a pooled one, and the reader may take one more. */
    private void recycle(ByteBuffer body) {
        if (body.isDirect() && body.capacity() == plane.chunkFrameBytes && !linkAborted) {
            received.offer(body);
        }
        window.release();
    }

    /** The member has read {@code chunk} (normally the oldest held): its buffer goes back to the reader. */
    void giveBack(CollectiveMessage.Chunk chunk) {
        Held h = held.peek();
        if (h == null || h.values() != chunk.values() || !held.remove(h)) {
            h = null;
            for (Held other : held) {
                if (other.values() == chunk.values() && held.remove(other)) {
                    h = other;
                    break;
                }
            }
        }
        if (h == null) {
            return;
        }
        free(h.body(), h.end());
        if (h.end() >= 0) {
            unmapIfUnused();
        }
    }

    /**
     * Unmaps the link's shared memory once nothing can touch it: the reader and writer have ended and the member
     * holds no frame body. A body the member never gives back (its collective failed) keeps the mapping until the
     * garbage collector takes it.
     */
    private void unmapIfUnused() {
        SharedMemoryChannel sh = shared;
        if (sh == null) {
            return;
        }
        synchronized (this) {
            if (!(writerDone && readerDone) || !held.isEmpty()) {
                return;
            }
        }
        sh.unmap();
    }

    private boolean readFully(PayloadChannel ch, ByteBuffer into, boolean eofAllowed) throws IOException {
        while (into.hasRemaining()) {
            if (ch.read(into) < 0) {
                if (eofAllowed && into.position() == 0) {
                    return false;
                }
                throw new IOException("the socket closed in the middle of a frame");
            }
        }
        return true;
    }

    /** The link never connected: nothing will run on it. */
    synchronized void finishUnconnected() {
        writerDone = true;
        readerDone = true;
        finished.complete(null);
    }

    private void done(boolean writing) {
        boolean both;
        synchronized (this) {
            if (writing) {
                writerDone = true;
            } else {
                readerDone = true;
            }
            both = writerDone && readerDone;
        }
        if (both) {
            SocketPayloadPlane.closeQuietly(channel);
            unmapIfUnused();
            finished.complete(null);
        }
    }

    void abort() {
        synchronized (this) {
            linkAborted = true;
            queue.clear();
            // A closed plane may stay referenced (by its node's termination hook): it keeps no frames.
            pool.clear();
            received.clear();
        }
        Thread waiting = sentWaiter;
        if (waiting != null) {
            java.util.concurrent.locks.LockSupport.unpark(waiting);
        }
        SocketPayloadPlane.closeQuietly(channel);
        SharedMemoryChannel sh = shared;
        if (sh != null) {
            try {
                sh.close();
            } catch (IOException ignored) {
                // Closing anyway.
            }
        }
        Thread w = writer;
        if (w != null && w != Thread.currentThread()) {
            w.interrupt();
        }
        Thread r = reader;
        if (r != null && r != Thread.currentThread()) {
            r.interrupt();
        }
        if (channel == null && (w == null || !w.isAlive())) {
            finishUnconnected();
        }
    }
}
