package io.graphlane.backend.cpu.param;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.nio.ByteBuffer;
import java.nio.MappedByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Pre-faulting mapped weights: every slice of a file mapping is loaded, other buffers are left alone, bytes unchanged. */
class MappedPagesTest {
    @Test
    void aMappedFileIsLoadedSliceBySliceAndReadsTheSame(@TempDir Path dir) throws Exception {
        int size = MappedPages.SLICE_BYTES * 2 + 4096 + 3;
        byte[] content = new byte[size];
        for (int i = 0; i < size; i++) {
            content[i] = (byte) (i * 31 + 7);
        }
        Path file = Files.write(dir.resolve("weights.bin"), content);
        try (FileChannel channel = FileChannel.open(file, StandardOpenOption.READ)) {
            MappedByteBuffer mapped = channel.map(FileChannel.MapMode.READ_ONLY, 0, size);
            ByteBuffer view = mapped.slice(5, size - 5);
            assertEquals(size - 5, MappedPages.load(view), "every byte of a mapped view, over three slices");
            assertEquals(size - 5, view.remaining(), "the caller's buffer is not moved");
            for (int i : new int[] {0, MappedPages.SLICE_BYTES, size - 6}) {
                assertEquals(content[i + 5], view.get(i));
            }
        }
    }

    @Test
    void aHeapBufferIsLeftAlone() {
        assertEquals(0, MappedPages.load(ByteBuffer.allocate(64)));
    }
}
