package io.graphlane.backend.cpu.collective;

import java.nio.FloatBuffer;

/**
 * What members of a group send each other through a {@link CollectiveTransport}: a descriptor
 * before any payload, payload chunks (and, for chunks lent by reference, the receiver's answer that
 * it has consumed one), and a notice that a member left. Plain values apart from the chunk's view,
 * whose floats a transport across nodes copies onto the wire (Kryo) without knowing the algorithms.
 */
public sealed interface CollectiveMessage {

    /** A member's descriptor of its next collective. */
    record Descriptor(CollectiveDescriptor descriptor) implements CollectiveMessage {
    }

    /**
     * A run of payload values of collective {@code sequence}, destined for element {@code offset}
     * of the receiver's working buffer: {@code values} holds exactly the run's floats from index 0
     * (absolute reads only). Over a transport that {@link CollectiveTransport#sharesMemory shares memory}
     * it is a view of the sender's own storage lent under {@code loan}: the receiver reads it only
     * inside the loan and then answers {@link Consumed}. Otherwise {@code loan} is {@code null} and
     * the values are the receiver's own copy.
     */
    record Chunk(long sequence, long offset, FloatBuffer values, ChunkLoan loan) implements CollectiveMessage {
    }

    /** The receiver has read the lent chunk of collective {@code sequence} at {@code offset}; the sender may change its storage. */
    record Consumed(long sequence, long offset) implements CollectiveMessage {
    }

    /**
     * Member {@code member} (the root of the failure: the member that left, was absent or differed)
     * is gone for this group; {@code reason} says why. Every receiver fails its collective.
     */
    record Left(int member, String reason) implements CollectiveMessage {
    }
}
