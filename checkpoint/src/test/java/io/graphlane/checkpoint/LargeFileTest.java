package io.graphlane.checkpoint;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.graphlane.core.param.EncodedLease;
import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** A checkpoint file over 2 GiB (sparse: it costs no disk) maps and reads a tensor stored past the 2 GiB mark. */
class LargeFileTest {
    @TempDir
    Path tmp;

    private static final long PAD = (1L << 31) + (1L << 29); // 2.5 GiB of zeros before the tail tensor

    @Test
    void tensorAtTheEndOfAFileOverTwoGibibytesIsReadInPlace() throws IOException {
        String header = "{\"pad\":{\"dtype\":\"U8\",\"shape\":[" + PAD + "],\"data_offsets\":[0," + PAD + "]},"
                + "\"tail\":{\"dtype\":\"F32\",\"shape\":[4,4],\"data_offsets\":[" + PAD + "," + (PAD + 64) + "]}}";
        byte[] json = header.getBytes(StandardCharsets.UTF_8);
        long dataStart = 8 + json.length;
        long length = dataStart + PAD + 64;
        Path file = tmp.resolve("model.safetensors");
        try (RandomAccessFile raf = new RandomAccessFile(file.toFile(), "rw")) {
            raf.setLength(length);
            byte[] prefix = ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN).putLong(0, json.length).array();
            raf.seek(0);
            raf.write(prefix);
            raf.write(json);
            ByteBuffer tail = ByteBuffer.allocate(64).order(ByteOrder.LITTLE_ENDIAN);
            for (int i = 0; i < 16; i++) {
                tail.putFloat(i * 4, i + 0.5f);
            }
            raf.seek(dataStart + PAD);
            raf.write(tail.array());
        } catch (IOException e) {
            Assumptions.abort("the filesystem refused a sparse " + length + "-byte file: " + e);
        }
        Assumptions.assumeTrue(Files.size(file) == length, "the filesystem did not extend the file");

        try (CheckpointSource source = CheckpointSource.open(tmp)) {
            EncodedLease tail = source.lease("tail");
            assertEquals(16 * 4, tail.bytes().remaining());
            assertEquals(0.5f, tail.bytes().getFloat(0));
            assertEquals(15.5f, tail.bytes().getFloat(60));
            EncodedLease rows = source.lease("tail", Selection.range(0, 2, 4));
            assertEquals(8.5f, rows.bytes().getFloat(0));
            // a strided selection of the tail, past 2 GiB, gathered from its covering span
            EncodedLease column = source.lease("tail", Selection.indices(1, 3));
            assertEquals(3.5f, column.bytes().getFloat(0));
            assertEquals(15.5f, column.bytes().getFloat(12));
            // the 2.5 GiB tensor cannot be one buffer, but a span of it past 2 GiB can
            CheckpointException whole = assertThrows(CheckpointException.class, () -> source.lease("pad"));
            assertTrue(whole.getMessage().contains("lease a range"), whole.getMessage());
            EncodedLease span = source.lease("pad", Selection.span(PAD - 16, PAD));
            assertEquals(16, span.bytes().remaining());
            assertEquals(0, span.bytes().get(15));
            tail.release();
            rows.release();
            column.release();
            span.release();
            assertEquals(0, source.openLeaseCount());
        }
    }
}
