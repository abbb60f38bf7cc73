package io.graphlane.checkpoint.safetensors;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.graphlane.checkpoint.CheckpointException;
import io.graphlane.checkpoint.CheckpointSource;
import io.graphlane.checkpoint.Fixtures;
import io.graphlane.core.param.EncodedLease;
import io.graphlane.core.tensor.DType;
import io.graphlane.core.tensor.TensorSpec;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class SafetensorsWriterTest {
    @TempDir
    Path tmp;

    @Test
    void writtenFileReadsBackWithEveryDtypeMetadataAndAlignedData() throws Exception {
        Path file = tmp.resolve("model.safetensors");
        ByteBuffer i8 = ByteBuffer.wrap(new byte[] {1, -2, 3});
        ByteBuffer i64 = ByteBuffer.allocate(16).order(ByteOrder.LITTLE_ENDIAN).putLong(0, Long.MIN_VALUE).putLong(8, 7);
        ByteBuffer bf16 = ByteBuffer.allocate(4).order(ByteOrder.LITTLE_ENDIAN).putShort(0, (short) 0x3F80).putShort(2, (short) 0xC000);
        SafetensorsHeader header = new SafetensorsWriter()
                .metadata("format", "pt")
                .add("bytes", TensorSpec.of(DType.I8, 3), i8)
                .add("longs", TensorSpec.of(DType.I64, 2), i64)
                .add("halves", TensorSpec.of(DType.BF16, 2, 1), bf16)
                .add("empty", TensorSpec.of(DType.F32, 0, 5), ByteBuffer.allocate(0))
                .addF32("scalar", new long[0], new float[] {2.5f})
                .write(file);
        assertEquals(Map.of("format", "pt"), header.metadata());
        assertEquals(List.of("bytes", "longs", "halves", "empty", "scalar"), List.copyOf(header.tensors().keySet()));
        assertEquals(0, header.headerLength() % 8, "header padded so data starts 8-byte aligned");
        SafetensorsHeader reread = SafetensorsHeader.read(file);
        assertEquals(header.tensors(), reread.tensors());
        assertEquals(Files.size(file), reread.dataStart() + 3 + 16 + 4 + 0 + 4);
        try (CheckpointSource source = CheckpointSource.open(tmp)) {
            EncodedLease l = source.lease("longs");
            assertEquals(Long.MIN_VALUE, l.bytes().getLong(0));
            assertEquals(7, l.bytes().getLong(8));
            EncodedLease s = source.lease("scalar");
            assertEquals(2.5f, s.bytes().getFloat(0));
            EncodedLease e = source.lease("empty");
            assertEquals(0, e.bytes().remaining());
            assertArrayEquals(new byte[] {1, -2, 3}, Fixtures.bytes(source.lease("bytes").bytes()));
        }
    }

    @Test
    void contentWritingTheWrongByteCountLeavesNoFile() {
        Path file = tmp.resolve("bad.safetensors");
        CheckpointException e = assertThrows(CheckpointException.class, () -> new SafetensorsWriter()
                .add("t", TensorSpec.of(DType.F32, 4), out -> out.write(ByteBuffer.allocate(12)))
                .write(file));
        assertTrue(e.getMessage().contains("'t'") && e.getMessage().contains("wrote 12 bytes, expected 16"), e.getMessage());
        assertFalse(Files.exists(file));
        try (var files = Files.list(tmp)) {
            assertEquals(0, files.count(), "the temporary file was removed");
        }
        catch (java.io.IOException io) {
            throw new java.io.UncheckedIOException(io);
        }
    }

    @Test
    void refusesDuplicateReservedAndMismatchedTensors() {
        SafetensorsWriter w = new SafetensorsWriter().addF32("a", new long[] {1}, new float[] {1});
        assertThrows(IllegalArgumentException.class, () -> w.addF32("a", new long[] {1}, new float[] {1}));
        assertThrows(IllegalArgumentException.class, () -> w.addF32("__metadata__", new long[] {1}, new float[] {1}));
        assertThrows(IllegalArgumentException.class, () -> w.add("b", TensorSpec.of(DType.F32, 2), ByteBuffer.allocate(4)));
    }
}
