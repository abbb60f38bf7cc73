package io.graphlane.backend.cpu.collective;

import java.nio.FloatBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

/**
 * Members in one JVM: each member has one inbox queue that every other member puts messages into.
 * By default chunks travel by reference ({@link #sharesMemory()} is true): the receiver reads
 * straight from the sender's storage, so a segment costs one pass over memory and no allocation.
 * {@link #copying} makes one that copies every chunk on send instead, as a transport across nodes
 * must, so that path can be exercised in one JVM.
 */
public final class InProcessTransport implements CollectiveTransport {
    private final List<LinkedBlockingQueue<Envelope>> inboxes;
    private final boolean byReference;

    /** A transport for {@code size} members that hands chunks over by reference. */
    public InProcessTransport(int size) {
        this(size, true);
    }

    private InProcessTransport(int size, boolean byReference) {
        if (size < 1) {
            throw new IllegalArgumentException("a collective group needs at least one member, got " + size);
        }
        this.byReference = byReference;
        inboxes = new ArrayList<>(size);
        for (int i = 0; i < size; i++) {
            inboxes.add(new LinkedBlockingQueue<>());
        }
    }

    /** A transport for {@code size} members that copies each chunk's floats on send, like one across nodes. */
    public static InProcessTransport copying(int size) {
        return new InProcessTransport(size, false);
    }

    @Override
    public int size() {
        return inboxes.size();
    }

    @Override
    public boolean sharesMemory() {
        return byReference;
    }

    @Override
    public void send(int from, int to, CollectiveMessage message) {
        Objects.requireNonNull(message, "message");
        CollectiveMessage delivered = message;
        if (!byReference && message instanceof CollectiveMessage.Chunk chunk) {
            FloatBuffer values = chunk.values();
            float[] copy = new float[values.remaining()];
            values.get(values.position(), copy);
            delivered = new CollectiveMessage.Chunk(chunk.sequence(), chunk.offset(), FloatBuffer.wrap(copy), null);
        }
        inboxes.get(to).add(new Envelope(from, delivered));
    }

    @Override
    public Envelope poll(int to, long timeoutNanos) throws InterruptedException {
        return inboxes.get(to).poll(Math.max(0, timeoutNanos), TimeUnit.NANOSECONDS);
    }
}
