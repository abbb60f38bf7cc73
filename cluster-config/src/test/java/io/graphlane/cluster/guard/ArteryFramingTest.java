package io.graphlane.cluster.guard;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Random;
import org.junit.jupiter.api.Test;

class ArteryFramingTest {
    static final int MAX = 256 * 1024;
    static final int MAX_LARGE = 4 * 1024 * 1024;

    /** Artery's connection header for {@code stream}. */
    static byte[] connectionHeader(int stream) {
        return new byte[] {'A', 'K', 'K', 'A', (byte) stream};
    }

    /** One frame: its length, then an envelope of {@code length} bytes beginning with {@code version}. */
    static byte[] frame(int length, byte version, Random random) {
        ByteBuffer b = ByteBuffer.allocate(4 + Math.max(length, 0)).order(ByteOrder.LITTLE_ENDIAN);
        b.putInt(length);
        if (length > 0) {
            byte[] body = new byte[length];
            random.nextBytes(body);
            body[0] = version;
            b.put(body);
        }
        return b.array();
    }

    static byte[] concat(byte[]... parts) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        for (byte[] p : parts) {
            out.writeBytes(p);
        }
        return out.toByteArray();
    }

    /**
     * Feeds {@code bytes} in pieces of {@code piece} bytes the way the guard does (held-back bytes offered again in
     * front of the next piece) and answers the bytes it let through.
     */
    static byte[] feed(ArteryFraming framing, byte[] bytes, int piece) throws ArteryFraming.Violation {
        ByteBuffer buffer = ByteBuffer.allocate(bytes.length + 16);
        ByteArrayOutputStream passed = new ByteArrayOutputStream();
        for (int at = 0; at < bytes.length; at += piece) {
            buffer.put(bytes, at, Math.min(piece, bytes.length - at));
            buffer.flip();
            int n = framing.scan(buffer);
            byte[] out = new byte[n];
            buffer.get(out);
            passed.writeBytes(out);
            buffer.compact();
        }
        return passed.toByteArray();
    }

    @Test
    void wellFormedFramesPassWhole_inPiecesOfEverySize() throws Exception {
        Random random = new Random(7);
        byte[] stream = concat(connectionHeader(2), frame(28, (byte) 0, random), frame(1000, (byte) 0, random),
                frame(MAX, (byte) 0, random), frame(29, (byte) 0, random));
        for (int piece : new int[] {1, 2, 3, 4, 5, 6, 7, 31, 4096, stream.length}) {
            ArteryFraming framing = new ArteryFraming(MAX, MAX_LARGE);
            assertArrayEquals(stream, feed(framing, stream, piece), "pieces of " + piece);
            assertEquals(4, framing.frames());
        }
    }

    @Test
    void aHeaderIsHeldBackUntilItIsWhole() throws Exception {
        ArteryFraming framing = new ArteryFraming(MAX, MAX_LARGE);
        ByteBuffer b = ByteBuffer.wrap(new byte[] {'A', 'K', 'K', 'A'});
        assertEquals(0, framing.scan(b), "four bytes of the connection header pass nothing");
        ByteBuffer whole = ByteBuffer.wrap(concat(connectionHeader(1), new byte[] {40, 0, 0}));
        assertEquals(5, framing.scan(whole), "the connection header passes; three bytes of a frame length wait");
        assertTrue(framing.connectionHeaderSeen());
    }

    @Test
    void aBadLengthIsRefusedBeforeItsVersionByteArrives() {
        ArteryFraming framing = new ArteryFraming(MAX, MAX_LARGE);
        byte[] bytes = concat(connectionHeader(1), new byte[] {(byte) 0xff, (byte) 0xff, (byte) 0xff, 0x7f});
        ArteryFraming.Violation v = assertThrows(ArteryFraming.Violation.class, () -> framing.scan(ByteBuffer.wrap(bytes)));
        assertEquals(5, v.forwardable());
        ArteryFraming.Violation firstByte = assertThrows(ArteryFraming.Violation.class,
                () -> new ArteryFraming(MAX, MAX_LARGE).scan(ByteBuffer.wrap(new byte[] {'G'})));
        assertEquals("it does not start with Artery's magic 'AKKA' (first bytes 47)", firstByte.getMessage());
    }

    @Test
    void theLargeStreamTakesItsOwnBound() throws Exception {
        Random random = new Random(3);
        byte[] big = concat(connectionHeader(3), frame(MAX + 1, (byte) 0, random));
        assertEquals(big.length, feed(new ArteryFraming(MAX, MAX_LARGE), big, 8192).length);
        byte[] sameOnOrdinary = concat(connectionHeader(2), frame(MAX + 1, (byte) 0, random));
        ArteryFraming.Violation v = assertThrows(ArteryFraming.Violation.class,
                () -> feed(new ArteryFraming(MAX, MAX_LARGE), sameOnOrdinary, 8192));
        assertEquals("frame 1 declares " + (MAX + 1) + " bytes; a frame on this stream holds 28 to " + MAX, v.getMessage());
    }

    @Test
    void everyHostileHeaderIsRefusedAtItsFrameBoundary() {
        Random random = new Random(11);
        byte[] good = frame(100, (byte) 0, random);
        int[] lengths = {0, -1, -5, Integer.MAX_VALUE, Integer.MIN_VALUE, 27, MAX + 1};
        for (int length : lengths) {
            byte[] bytes = concat(connectionHeader(1), good, lengthOnly(length), new byte[64]);
            ArteryFraming.Violation v = assertThrows(ArteryFraming.Violation.class,
                    () -> new ArteryFraming(MAX, MAX_LARGE).scan(ByteBuffer.wrap(bytes)), "length " + length);
            assertEquals(5 + good.length, v.forwardable(), "the good frame before it may still pass, length " + length);
            assertTrue(v.getMessage().startsWith("frame 2 declares " + length + " bytes"), v.getMessage());
        }
        byte[] badVersion = concat(connectionHeader(1), frame(100, (byte) 1, random));
        ArteryFraming.Violation version = assertThrows(ArteryFraming.Violation.class,
                () -> new ArteryFraming(MAX, MAX_LARGE).scan(ByteBuffer.wrap(badVersion)));
        assertEquals(5, version.forwardable());
        assertEquals("frame 1 is of protocol version 1, expected 0", version.getMessage());
        ArteryFraming.Violation magic = assertThrows(ArteryFraming.Violation.class,
                () -> new ArteryFraming(MAX, MAX_LARGE).scan(ByteBuffer.wrap("GET / HTTP/1.1\r\n".getBytes())));
        assertEquals(0, magic.forwardable());
        assertEquals("it does not start with Artery's magic 'AKKA' (first bytes 47 45 54 20)", magic.getMessage());
        ArteryFraming.Violation stream = assertThrows(ArteryFraming.Violation.class,
                () -> new ArteryFraming(MAX, MAX_LARGE).scan(ByteBuffer.wrap(connectionHeader(4))));
        assertEquals("it names stream 4; Artery's streams are 1, 2 and 3", stream.getMessage());
    }

    @Test
    void randomBytesNeverPassAHeaderArteryWouldMisread() {
        Random random = new Random(42);
        int refused = 0;
        for (int i = 0; i < 5_000; i++) {
            byte[] bytes = new byte[1 + random.nextInt(300)];
            random.nextBytes(bytes);
            if (random.nextInt(4) > 0) {
                System.arraycopy(connectionHeader(1 + random.nextInt(3)), 0, bytes, 0, Math.min(5, bytes.length));
            }
            if (bytes.length > 9 && random.nextBoolean()) {
                ByteBuffer.wrap(bytes, 5, 4).order(ByteOrder.LITTLE_ENDIAN).putInt(28 + random.nextInt(100));
                bytes[9] = 0;
            }
            ArteryFraming framing = new ArteryFraming(64, 128);
            ByteArrayOutputStream passed = new ByteArrayOutputStream();
            ByteBuffer buffer = ByteBuffer.allocate(bytes.length + 16);
            int piece = 1 + random.nextInt(16);
            try {
                for (int at = 0; at < bytes.length; at += piece) {
                    buffer.put(bytes, at, Math.min(piece, bytes.length - at)).flip();
                    byte[] out = new byte[framing.scan(buffer)];
                    buffer.get(out).compact();
                    passed.writeBytes(out);
                }
            } catch (ArteryFraming.Violation v) {
                refused++;
                passed.write(buffer.array(), buffer.position(), v.forwardable());
            }
            assertWellFramed(passed.toByteArray(), 64, 128);
        }
        assertTrue(refused > 1_000, "most random streams are refused: " + refused);
    }

    /**
     * An independent reading of what Artery may be given: a connection header with a known stream, then frames with a
     * length in [28, bound] and version 0, the last one possibly cut short (its body still streaming).
     */
    static void assertWellFramed(byte[] passed, int max, int maxLarge) {
        if (passed.length == 0) {
            return;
        }
        assertTrue(passed.length >= 5, "a partial connection header was let through");
        assertEquals("AKKA", new String(passed, 0, 4, java.nio.charset.StandardCharsets.US_ASCII));
        int stream = passed[4];
        assertTrue(stream >= 1 && stream <= 3, "stream " + stream);
        int bound = stream == 3 ? maxLarge : max;
        int at = 5;
        while (at < passed.length) {
            assertTrue(passed.length - at >= 5, "a partial frame header was let through");
            int length = ByteBuffer.wrap(passed, at, 4).order(ByteOrder.LITTLE_ENDIAN).getInt();
            assertTrue(length >= 28 && length <= bound, "a frame of " + length + " bytes was let through");
            assertEquals(0, passed[at + 4], "a frame of another version was let through");
            at += 4 + length;
        }
    }

    private static byte[] lengthOnly(int length) {
        return ByteBuffer.allocate(4).order(ByteOrder.LITTLE_ENDIAN).putInt(length).array();
    }

    private static void assertArrayEquals(byte[] expected, byte[] actual, String message) {
        org.junit.jupiter.api.Assertions.assertArrayEquals(expected, actual, message);
    }
}
