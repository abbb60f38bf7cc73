package io.graphlane.checkpoint;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URISyntaxException;
import java.net.URL;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.stream.Stream;

/** The tiny-llama fixture copied into test resources, and writable copies of it. */
public final class Fixtures {
    private Fixtures() {
    }

    /** The fixture directory {@code tiny-llama/<layout>} ("" for the F32 single file, "bf16", "sharded"). */
    public static Path tinyLlama(String layout) {
        URL url = Fixtures.class.getResource("/tiny-llama/config.json");
        if (url == null) {
            throw new IllegalStateException("test resource tiny-llama/config.json is missing");
        }
        try {
            Path root = Path.of(url.toURI()).getParent();
            return layout.isEmpty() ? root : root.resolve(layout);
        } catch (URISyntaxException e) {
            throw new IllegalStateException(e);
        }
    }

    /** A writable copy of {@code tiny-llama/<layout>} (files only, no subdirectories) under {@code tmp}. */
    public static Path copy(String layout, Path tmp) {
        Path src = tinyLlama(layout);
        Path dst = tmp.resolve(layout.isEmpty() ? "tiny-llama" : layout);
        try {
            Files.createDirectories(dst);
            try (Stream<Path> files = Files.list(src)) {
                for (Path f : (Iterable<Path>) files::iterator) {
                    if (Files.isRegularFile(f)) {
                        Files.copy(f, dst.resolve(f.getFileName()), StandardCopyOption.REPLACE_EXISTING);
                        dst.resolve(f.getFileName()).toFile().setWritable(true);
                    }
                }
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return dst;
    }

    /** The bytes of a buffer's remaining content. */
    public static byte[] bytes(ByteBuffer b) {
        ByteBuffer d = b.duplicate();
        byte[] out = new byte[d.remaining()];
        d.get(out);
        return out;
    }
}
