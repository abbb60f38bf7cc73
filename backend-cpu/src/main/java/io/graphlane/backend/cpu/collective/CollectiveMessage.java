package io.graphlane.backend.cpu.collective;

/**
 * What members of a group send each other through a {@link CollectiveTransport}: a descriptor
 * before any payload, payload chunks, and a notice that a member left. Plain values, so a
 * transport across nodes can frame them (Kryo) without knowing the algorithms.
 */
public sealed interface CollectiveMessage {

    /** A member's descriptor of its next collective. */
    record Descriptor(CollectiveDescriptor descriptor) implements CollectiveMessage {
    }

    /**
     * A run of payload values of collective {@code sequence}, destined for element {@code offset}
     * of the receiver's working buffer.
     */
    record Chunk(long sequence, long offset, float[] values) implements CollectiveMessage {
    }

    /**
     * Member {@code member} (the root of the failure: the member that left, was absent or differed)
     * is gone for this group; {@code reason} says why. Every receiver fails its collective.
     */
    record Left(int member, String reason) implements CollectiveMessage {
    }
}
