package io.graphlane.backend.cpu.collective;

import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

/** Members in one JVM: each member has one inbox queue that every other member puts messages into. */
public final class InProcessTransport implements CollectiveTransport {
    private final List<LinkedBlockingQueue<Envelope>> inboxes;

    /** A transport for {@code size} members. */
    public InProcessTransport(int size) {
        if (size < 1) {
            throw new IllegalArgumentException("a collective group needs at least one member, got " + size);
        }
        inboxes = new ArrayList<>(size);
        for (int i = 0; i < size; i++) {
            inboxes.add(new LinkedBlockingQueue<>());
        }
    }

    @Override
    public int size() {
        return inboxes.size();
    }

    @Override
    public void send(int from, int to, CollectiveMessage message) {
        Objects.requireNonNull(message, "message");
        inboxes.get(to).add(new Envelope(from, message));
    }

    @Override
    public Envelope poll(int to, long timeoutNanos) throws InterruptedException {
        return inboxes.get(to).poll(Math.max(0, timeoutNanos), TimeUnit.NANOSECONDS);
    }
}
