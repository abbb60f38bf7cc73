package io.graphlane.checkpoint.safetensors;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;

/** Hand-made safetensors files, valid or not, for refusal tests. */
final class Crafted {
    private Crafted() {
    }

    /** A file of {@code header} (as UTF-8, its true length as N) followed by {@code dataBytes} bytes of data. */
    static Path file(Path dir, String name, String header, int dataBytes) {
        byte[] json = header.getBytes(StandardCharsets.UTF_8);
        return bytes(dir, name, concat(prefix(json.length), json, new byte[dataBytes]));
    }

    /** A file of exactly these bytes. */
    static Path bytes(Path dir, String name, byte[] content) {
        Path p = dir.resolve(name);
        try {
            Files.write(p, content);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return p;
    }

    /** The 8-byte little-endian length prefix. */
    static byte[] prefix(long n) {
        return ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN).putLong(0, n).array();
    }

    static byte[] concat(byte[]... parts) {
        int len = 0;
        for (byte[] p : parts) {
            len += p.length;
        }
        byte[] out = new byte[len];
        int at = 0;
        for (byte[] p : parts) {
            System.arraycopy(p, 0, out, at, p.length);
            at += p.length;
        }
        return out;
    }
}
