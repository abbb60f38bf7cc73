package io.graphlane.backend.gpu.param;

import java.util.ArrayList;
import java.util.List;

/**
 * How one upload is cut into chunks that take turns in a few pinned staging buffers: chunk i
 * uses buffer {@code i % buffers}, so while chunk i is copied to the device, chunk i + 1 is
 * filled on the host (double buffering with two buffers). Chunks hold whole source elements, and
 * each says where its converted bytes land in the destination.
 *
 * @param sourceBytes the encoded size
 * @param chunks the chunks in upload order
 */
public record StagingPlan(long sourceBytes, List<Chunk> chunks) {

    /**
     * One chunk.
     *
     * @param index its position in upload order
     * @param slot the staging buffer it uses
     * @param sourceOffset where it starts in the encoded bytes
     * @param length its encoded length
     * @param destinationOffset where its converted bytes start in the device weight
     * @param elements how many elements it holds
     */
    public record Chunk(int index, int slot, long sourceOffset, long length, long destinationOffset, long elements) {
    }

    public StagingPlan {
        chunks = List.copyOf(chunks);
    }

    /**
     * Plans an upload of {@code sourceBytes} encoded bytes of {@code sourceElementBytes}-byte elements,
     * each widened to {@code destinationElementBytes} on the device, through {@code buffers} staging
     * buffers of {@code chunkBytes} each.
     */
    public static StagingPlan of(long sourceBytes, int sourceElementBytes, int destinationElementBytes, long chunkBytes, int buffers) {
        if (sourceBytes < 0 || sourceElementBytes <= 0 || destinationElementBytes <= 0 || buffers <= 0) {
            throw new IllegalArgumentException("staging plan: sizes must be positive, got " + sourceBytes + " bytes of "
                    + sourceElementBytes + "-byte elements into " + destinationElementBytes + "-byte elements, " + buffers + " buffers");
        }
        if (sourceBytes % sourceElementBytes != 0) {
            throw new IllegalArgumentException("staging plan: " + sourceBytes + " bytes is not a whole number of "
                    + sourceElementBytes + "-byte elements");
        }
        long perChunk = chunkBytes - chunkBytes % sourceElementBytes;
        if (perChunk <= 0) {
            throw new IllegalArgumentException("staging plan: chunk of " + chunkBytes + " bytes holds no " + sourceElementBytes + "-byte element");
        }
        List<Chunk> chunks = new ArrayList<>();
        int index = 0;
        for (long offset = 0; offset < sourceBytes; offset += perChunk) {
            long length = Math.min(perChunk, sourceBytes - offset);
            long firstElement = offset / sourceElementBytes;
            chunks.add(new Chunk(index, index % buffers, offset, length, firstElement * destinationElementBytes, length / sourceElementBytes));
            index++;
        }
        return new StagingPlan(sourceBytes, chunks);
    }

    /** The chunk that last used {@code chunk}'s staging buffer before it, whose copy must finish before the buffer is refilled. */
    public java.util.Optional<Chunk> previousUserOfSlot(Chunk chunk, int buffers) {
        int previous = chunk.index() - buffers;
        return previous < 0 ? java.util.Optional.empty() : java.util.Optional.of(chunks.get(previous));
    }
}
