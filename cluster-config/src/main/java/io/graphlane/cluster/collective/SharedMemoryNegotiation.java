package io.graphlane.cluster.collective;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The shared-memory step of a payload link's handshake, once the link's handshake was accepted: the connecting rank
 * offers a segment it created (its path, a random token and the ring size) or none, and the accepting rank maps it only
 * if it finds that token there, so ranks on different hosts (or of another user) keep the socket. Over the link's own
 * channel, inside TLS when TLS is on. Part of {@link SocketPayloadPlane}.
 */
final class SharedMemoryNegotiation {
    private static final Logger LOG = LoggerFactory.getLogger(SocketPayloadPlane.class);
    /** The longest path a shared-memory offer may name. */
    static final int MAX_OFFER_PATH_BYTES = 4096;

    private final String group;
    private final int rank;
    /** Where segments are created; null when this rank offers and maps none. */
    private final java.nio.file.Path directory;
    private final int bufferBytes;
    private final int chunkFrameBytes;

    SharedMemoryNegotiation(String group, int rank, java.nio.file.Path directory, int bufferBytes, int chunkFrameBytes) {
        this.group = group;
        this.rank = rank;
        this.directory = directory;
        this.bufferBytes = bufferBytes;
        this.chunkFrameBytes = chunkFrameBytes;
    }

    /**
     * The connecting side, once its handshake is accepted: offers a new shared-memory segment (its path, token and ring
     * size) if this rank has a directory for them, or none; the link's frames then travel through it, or (null) through
     * {@code ch}. The file is deleted once the offer is answered, whatever the answer.
     */
    SharedMemoryChannel offer(PayloadChannel ch, int peer) throws IOException {
        SharedMemorySegment segment = null;
        if (directory != null) {
            try {
                // Room for a few chunk frames, each read in place (at most half the ring), up to 64 MiB a direction
                // (longer frames are copied out in pieces).
                long ring = Math.min(Math.max(bufferBytes, 4L * chunkFrameBytes), Math.max(bufferBytes, 64L << 20));
                segment = SharedMemorySegment.create(directory, SharedMemorySegment.ringFor(ring));
            } catch (IOException e) {
                LOG.info("collective group {} rank {}: no shared memory for the link to rank {} ({}); its payload takes the socket",
                        group, rank, peer, e.getMessage());
            }
        }
        try {
            if (segment == null) {
                ByteBuffer none = ByteBuffer.allocate(4).putInt(0).flip();
                while (none.hasRemaining()) {
                    ch.write(none);
                }
                return null;
            }
            byte[] path = segment.path().toString().getBytes(StandardCharsets.UTF_8);
            ByteBuffer offer = ByteBuffer.allocate(4 + path.length + 8 + 4);
            offer.putInt(path.length).put(path).putLong(segment.token()).putInt(segment.ringBytes()).flip();
            while (offer.hasRemaining()) {
                ch.write(offer);
            }
            ByteBuffer answer = ByteBuffer.allocate(1);
            if (!PayloadChannel.readFully(ch, answer)) {
                throw new IOException("rank " + peer + " closed before it answered the shared-memory offer");
            }
            if (answer.get(0) != SocketPayloadPlane.ACCEPTED) {
                segment.unmap();
                return null;
            }
            return new SharedMemoryChannel(ch, segment, true);
        } catch (IOException | RuntimeException e) {
            if (segment != null) {
                segment.unmap();
            }
            throw e;
        } finally {
            if (segment != null) {
                segment.delete();
            }
        }
    }

    /**
     * The accepting side: reads the connecting rank's shared-memory offer and maps it if it can; the link's frames then
     * travel through it, or (null) through {@code ch}.
     */
    SharedMemoryChannel answer(PayloadChannel ch, int from) throws IOException {
        ByteBuffer head = ByteBuffer.allocate(4);
        if (!PayloadChannel.readFully(ch, head)) {
            throw new IOException("rank " + from + " closed before its shared-memory offer");
        }
        int pathBytes = head.getInt(0);
        if (pathBytes == 0) {
            return null;
        }
        if (pathBytes < 0 || pathBytes > MAX_OFFER_PATH_BYTES) {
            throw new IOException("rank " + from + " offered a shared-memory path of " + pathBytes + " bytes; expected 0.." + MAX_OFFER_PATH_BYTES);
        }
        ByteBuffer rest = ByteBuffer.allocate(pathBytes + 8 + 4);
        if (!PayloadChannel.readFully(ch, rest)) {
            throw new IOException("rank " + from + " closed during its shared-memory offer");
        }
        rest.flip();
        byte[] path = new byte[pathBytes];
        rest.get(path);
        long token = rest.getLong();
        int ringBytes = rest.getInt();
        SharedMemorySegment segment = directory == null ? null
                : SharedMemorySegment.open(java.nio.file.Path.of(new String(path, StandardCharsets.UTF_8)), token, ringBytes);
        ByteBuffer answer = ByteBuffer.wrap(new byte[] {segment == null ? SocketPayloadPlane.REFUSED : SocketPayloadPlane.ACCEPTED});
        try {
            while (answer.hasRemaining()) {
                ch.write(answer);
            }
        } catch (IOException e) {
            if (segment != null) {
                segment.unmap();
            }
            throw e;
        }
        return segment == null ? null : new SharedMemoryChannel(ch, segment, false);
    }
}
