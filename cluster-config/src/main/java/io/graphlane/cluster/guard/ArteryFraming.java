package io.graphlane.cluster.guard;

import java.nio.ByteBuffer;

/**
 * Checks one inbound Artery TCP connection's bytes against Artery's framing before they reach Artery: the connection
 * header (the magic {@code AKKA} and a stream id: 1 control, 2 ordinary, 3 large messages), then frames of a 4-byte
 * little-endian length and an envelope whose first byte is the protocol version. A frame's length must lie between an
 * envelope's fixed header ({@value #ENVELOPE_HEADER_BYTES} bytes) and Artery's maximum for the stream
 * ({@code maximum-frame-size}, or {@code maximum-large-frame-size} on the large stream), and its version must be
 * {@value #VERSION}.
 *
 * <p>Why: Pekko 1.2.1's framing stage reads the length without checking it. A negative length or one near 2^31 moves
 * its read cursor backwards or past the end, and the inbound stream, which every connection shares, then decodes the
 * same bytes without end (a warning per pass, one core busy) or fails until Artery gives up and the node is downed.
 * This check stops such a connection before its first bad byte is forwarded.
 *
 * <p>{@link #scan} answers how many of the bytes it is given may be forwarded: every byte of a checked connection
 * header or frame header, and a frame's body as it streams. The few bytes of a header not yet complete are held back
 * until the rest arrives, so Artery only ever sees whole, checked headers, and a refused connection ends on a frame
 * boundary. One instance per connection; not thread-safe.
 */
final class ArteryFraming {
    /** The connection header's magic in Pekko 1.x (Akka's, kept for wire compatibility). */
    static final byte[] MAGIC = {'A', 'K', 'K', 'A'};
    /** Magic plus the stream id byte. */
    static final int CONNECTION_HEADER_BYTES = MAGIC.length + 1;
    /** A frame's length field plus the envelope's version byte: what must be seen before any of the frame is forwarded. */
    static final int FRAME_HEADER_BYTES = 4 + 1;
    /** The fixed part of an Artery envelope (version, flags, table versions, uid, serializer, three tags). */
    static final int ENVELOPE_HEADER_BYTES = 28;
    /** The only Artery protocol version of Pekko 1.x. */
    static final byte VERSION = 0;
    /** Artery's stream ids. */
    static final int CONTROL_STREAM = 1;
    static final int ORDINARY_STREAM = 2;
    static final int LARGE_STREAM = 3;

    private final int maxFrameBytes;
    private final int maxLargeFrameBytes;
    private boolean connectionHeaderSeen;
    private int bound;
    private long bodyLeft;
    private long frames;

    /** A check with Artery's {@code maximum-frame-size} and {@code maximum-large-frame-size}. */
    ArteryFraming(int maxFrameBytes, int maxLargeFrameBytes) {
        if (maxFrameBytes < ENVELOPE_HEADER_BYTES || maxLargeFrameBytes < ENVELOPE_HEADER_BYTES) {
            throw new IllegalArgumentException("Artery's frame sizes must be at least " + ENVELOPE_HEADER_BYTES + " bytes, got "
                    + maxFrameBytes + " and " + maxLargeFrameBytes);
        }
        this.maxFrameBytes = maxFrameBytes;
        this.maxLargeFrameBytes = maxLargeFrameBytes;
    }

    /**
     * Thrown by {@link #scan} at the first header that breaks the framing; the message says what and where, and
     * {@link #forwardable()} how many of the scanned bytes before it may still be forwarded (whole frames and the rest of
     * a frame's body), so that the connection's end falls on a frame boundary.
     */
    static final class Violation extends Exception {
        private static final long serialVersionUID = 1L;
        private final int forwardable;

        Violation(String message, int forwardable) {
            super(message, null, false, false);
            this.forwardable = forwardable;
        }

        /** How many of the scanned bytes, from the buffer's position, come before the bad header. */
        int forwardable() {
            return forwardable;
        }
    }

    /**
     * Checks {@code bytes} from its position to its limit (neither is moved) as the next bytes of the connection, and
     * answers how many of them, from the position, may be forwarded now; the rest (at most a header's few bytes) must
     * be offered again, in front of the bytes that follow.
     *
     * @throws Violation at the first header that breaks the framing; nothing from that header on may be forwarded
     */
    int scan(ByteBuffer bytes) throws Violation {
        int start = bytes.position();
        int end = bytes.limit();
        int at = start;
        while (at < end) {
            if (bodyLeft > 0) {
                int n = (int) Math.min(bodyLeft, end - at);
                at += n;
                bodyLeft -= n;
                continue;
            }
            int headerBytes = connectionHeaderSeen ? FRAME_HEADER_BYTES : CONNECTION_HEADER_BYTES;
            // A frame's length is checked as soon as its four bytes are here, without waiting for the version byte.
            String wrong = connectionHeaderSeen ? checkFrameHeader(bytes, at, end - at) : checkConnectionHeader(bytes, at, end - at);
            if (wrong != null) {
                throw new Violation(wrong, at - start);
            }
            if (end - at < headerBytes) {
                break;
            }
            at += headerBytes;
        }
        return at - start;
    }

    /** Whether the connection header (magic and stream id) has been checked. */
    boolean connectionHeaderSeen() {
        return connectionHeaderSeen;
    }

    /** Frames whose header was checked so far. */
    long frames() {
        return frames;
    }

    /**
     * Checks the connection header at {@code at}, of which {@code available} bytes are here; null if what is here
     * passes (it is recorded as seen once whole), else what is wrong.
     */
    private String checkConnectionHeader(ByteBuffer bytes, int at, int available) {
        for (int i = 0; i < Math.min(MAGIC.length, available); i++) {
            if (bytes.get(at + i) != MAGIC[i]) {
                return "it does not start with Artery's magic 'AKKA' (first bytes " + hex(bytes, at, Math.min(MAGIC.length, available)) + ")";
            }
        }
        if (available < CONNECTION_HEADER_BYTES) {
            return null;
        }
        int stream = bytes.get(at + MAGIC.length);
        switch (stream) {
            case CONTROL_STREAM, ORDINARY_STREAM -> bound = maxFrameBytes;
            case LARGE_STREAM -> bound = maxLargeFrameBytes;
            default -> {
                return "it names stream " + stream + "; Artery's streams are 1, 2 and 3";
            }
        }
        connectionHeaderSeen = true;
        return null;
    }

    /**
     * Checks the frame header at {@code at}, of which {@code available} bytes are here; null if what is here passes
     * (the frame is counted once its header is whole), else what is wrong.
     */
    private String checkFrameHeader(ByteBuffer bytes, int at, int available) {
        if (available < 4) {
            return null;
        }
        int length = (bytes.get(at) & 0xff) | (bytes.get(at + 1) & 0xff) << 8 | (bytes.get(at + 2) & 0xff) << 16
                | (bytes.get(at + 3) & 0xff) << 24;
        if (length < ENVELOPE_HEADER_BYTES || length > bound) {
            return "frame " + (frames + 1) + " declares " + length + " bytes; a frame on this stream holds "
                    + ENVELOPE_HEADER_BYTES + " to " + bound;
        }
        if (available < FRAME_HEADER_BYTES) {
            return null;
        }
        byte version = bytes.get(at + 4);
        if (version != VERSION) {
            return "frame " + (frames + 1) + " is of protocol version " + version + ", expected " + VERSION;
        }
        bodyLeft = length - 1L;
        frames++;
        return null;
    }

    private static String hex(ByteBuffer bytes, int at, int n) {
        StringBuilder out = new StringBuilder();
        for (int i = 0; i < n; i++) {
            out.append(i == 0 ? "" : " ").append(String.format("%02x", bytes.get(at + i) & 0xff));
        }
        return out.toString();
    }
}
