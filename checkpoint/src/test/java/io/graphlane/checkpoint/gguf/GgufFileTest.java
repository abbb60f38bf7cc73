package io.graphlane.checkpoint.gguf;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.graphlane.checkpoint.CheckpointException;
import io.graphlane.checkpoint.CheckpointSource;
import io.graphlane.core.param.EncodedLease;
import io.graphlane.core.tensor.DType;
import io.graphlane.core.tensor.Shape;
import io.graphlane.core.tensor.TensorSpec;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.function.Consumer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** What the GGUF reader reads, and each rule it refuses a file for, with the one-line error naming the field. */
class GgufFileTest {
    @TempDir
    Path tmp;

    private static float[] ramp(int n) {
        float[] v = new float[n];
        for (int i = 0; i < n; i++) {
            v[i] = (i % 17 - 8) * 0.125f;
        }
        return v;
    }

    private static GgufWriter small() {
        return new GgufWriter()
                .put("general.architecture", "llama")
                .putU32("llama.block_count", 2)
                .putF32("llama.attention.layer_norm_rms_epsilon", 1e-5)
                .putBool("tokenizer.ggml.add_bos_token", true)
                .putStrings("tokenizer.ggml.tokens", "a", "b", "ab")
                .putFloats("tokenizer.ggml.scores", 0f, -1f, -2f)
                .putInts("tokenizer.ggml.token_type", 1, 1, 1)
                .add("w", GgmlType.F32, new long[] {3, 2}, ramp(6))
                .add("q", GgmlType.Q8_0, new long[] {2, 64}, ramp(128))
                .add("h", GgmlType.F16, new long[] {5}, ramp(5));
    }

    private Path write(GgufWriter w) {
        return w.write(tmp.resolve("m.gguf"));
    }

    @Test
    void readsMetadataTensorsAndLayout() {
        GgufFile f = GgufFile.read(write(small()));
        assertEquals(3, f.version());
        assertEquals(32, f.alignment());
        assertEquals(0, f.dataStart() % 32);
        assertEquals("llama", f.meta().string("general.architecture").orElseThrow());
        assertEquals(2, f.meta().integer("llama.block_count").getAsLong());
        assertEquals(1e-5f, (float) f.meta().number("llama.attention.layer_norm_rms_epsilon").getAsDouble());
        assertTrue(f.meta().bool("tokenizer.ggml.add_bos_token").orElseThrow());
        assertArrayEquals(new String[] {"a", "b", "ab"}, f.meta().strings("tokenizer.ggml.tokens").orElseThrow());
        GgufTensorInfo w = f.tensor("w");
        assertArrayEquals(new long[] {2, 3}, w.ne(), "ggml order: the row length first");
        assertEquals(Shape.of(3, 2), w.shape());
        assertEquals(new TensorSpec(DType.F32, Shape.of(3, 2)), w.storedSpec());
        GgufTensorInfo q = f.tensor("q");
        assertEquals(0, q.offset() % 32);
        assertEquals(2 * 2 * 34, q.byteSize());
        assertEquals(new TensorSpec(DType.U8, Shape.of(2, 68)), q.storedSpec(), "a quantized tensor is leased as rows of raw blocks");
        assertEquals(new TensorSpec(DType.F16, Shape.of(5)), f.tensor("h").storedSpec());
    }

    @Test
    void version2AndAnAlignmentReadToo() {
        GgufFile f = GgufFile.read(write(small().version(2).alignment(64)));
        assertEquals(2, f.version());
        assertEquals(64, f.alignment());
        assertEquals(0, f.dataStart() % 64);
        assertEquals(0, f.tensor("q").offset() % 64);
    }

    @Test
    void tensorsLeaseAsTheirStoredBytes() {
        GgufCheckpoint c = GgufCheckpoint.open(write(small()));
        assertEquals("gguf", c.catalog().format());
        try (CheckpointSource src = c.openSource()) {
            EncodedLease lease = src.lease("w");
            try {
                ByteBuffer b = lease.bytes();
                assertEquals(-1f, b.getFloat(0));
                assertEquals(-0.375f, b.getFloat(20));
            } finally {
                lease.release();
            }
            assertEquals(0, src.openLeaseCount());
        }
    }

    @Test
    void locatesTheOneGgufFileOfADirectory() throws IOException {
        Path dir = Files.createDirectories(tmp.resolve("model"));
        Path file = small().write(dir.resolve("x.gguf"));
        assertEquals(file, GgufCheckpoint.locate(dir));
        assertTrue(GgufCheckpoint.isGguf(dir));
        small().write(dir.resolve("y.gguf"));
        CheckpointException e = assertThrows(CheckpointException.class, () -> GgufCheckpoint.locate(dir));
        assertTrue(e.getMessage().contains("holds 2 .gguf files [x.gguf, y.gguf], expected exactly one"), e.getMessage());
        Path empty = Files.createDirectories(tmp.resolve("empty"));
        assertFalse(GgufCheckpoint.isGguf(empty));
    }

    // ---- refusals: each is one line naming the file and the field

    private String refusal(byte[] bytes) {
        Path p = tmp.resolve("bad.gguf");
        try {
            Files.write(p, bytes);
        } catch (IOException e) {
            throw new AssertionError(e);
        }
        GgufFormatException e = assertThrows(GgufFormatException.class, () -> GgufFile.read(p));
        assertTrue(e.getMessage().startsWith(p.toString() + ": "), e.getMessage());
        assertFalse(e.getMessage().contains("\n"), "one line: " + e.getMessage());
        return e.getMessage();
    }

    private String refusal(GgufWriter w) {
        return refusal(w.toBytes());
    }

    private static byte[] edit(byte[] bytes, Consumer<ByteBuffer> change) {
        byte[] copy = bytes.clone();
        change.accept(ByteBuffer.wrap(copy).order(ByteOrder.LITTLE_ENDIAN));
        return copy;
    }

    /** The offset of the first occurrence of {@code needle} in {@code hay}. */
    private static int indexOf(byte[] hay, String needle) {
        byte[] n = needle.getBytes(java.nio.charset.StandardCharsets.UTF_8);
        outer:
        for (int i = 0; i + n.length <= hay.length; i++) {
            for (int j = 0; j < n.length; j++) {
                if (hay[i + j] != n[j]) {
                    continue outer;
                }
            }
            return i;
        }
        throw new AssertionError("no " + needle);
    }

    @Test
    void refusesShortFilesAndWrongMagicOrVersion() {
        assertTrue(refusal(new byte[10]).contains("file is 10 bytes long, shorter than the 24-byte GGUF header"));
        byte[] good = small().toBytes();
        assertTrue(refusal(edit(good, b -> b.put(0, (byte) 'X'))).contains("expected 0x46554747 (\"GGUF\"): not a GGUF file"));
        assertTrue(refusal(edit(good, b -> b.putInt(4, 1))).contains("field 'version' is 1, expected 2 or 3 (GGUF v1"));
        assertTrue(refusal(edit(good, b -> b.putInt(4, 7))).contains("field 'version' is 7, expected 2 or 3"));
    }

    @Test
    void refusesCountsTheFileCannotHold() {
        byte[] good = small().toBytes();
        String m = refusal(edit(good, b -> b.putLong(16, 1L << 40)));
        assertTrue(m.contains("field 'metadata_kv_count' is 1099511627776, more than the"), m);
        m = refusal(edit(good, b -> b.putLong(8, -1L)));
        assertTrue(m.contains("field 'tensor_count' is 18446744073709551615"), m);
    }

    @Test
    void refusesStringAndArrayLengthsPastTheEnd() {
        byte[] good = small().toBytes();
        int key = indexOf(good, "general.architecture") - 8;
        String m = refusal(edit(good, b -> b.putLong(key, 1L << 50)));
        assertTrue(m.contains("metadata key 0 length") || m.contains("metadata key 0 (a string of 1125899906842624 bytes)"), m);
        assertTrue(m.contains("the file is truncated"), m);
        int tokens = indexOf(good, "tokenizer.ggml.tokens") + "tokenizer.ggml.tokens".length() + 8;
        m = refusal(edit(good, b -> b.putLong(tokens, 1L << 40)));
        assertTrue(m.contains("metadata 'tokenizer.ggml.tokens' array length' is 1099511627776, more than the"), m);
    }

    @Test
    void refusesUnknownValueTypesAndNestedArrays() {
        byte[] good = small().toBytes();
        int type = indexOf(good, "general.architecture") + "general.architecture".length();
        assertTrue(refusal(edit(good, b -> b.putInt(type, 13))).contains(
                "metadata 'general.architecture': value type 13 is not a GGUF type, expected 0 to 12"));
        int element = indexOf(good, "tokenizer.ggml.tokens") + "tokenizer.ggml.tokens".length() + 4;
        assertTrue(refusal(edit(good, b -> b.putInt(element, 9))).contains("an array of arrays is not read"));
        assertTrue(refusal(new GgufWriter().put("k", GgufValue.scalar(GgufValueType.BOOL, true)).put("k2",
                GgufValue.array(GgufValueType.BOOL, new byte[] {0, 2}))).contains("metadata 'k2'[1]: a BOOL is 2, expected 0 or 1"));
    }

    @Test
    void refusesDuplicateKeysAndTensors() {
        // the writer holds a key once, so a duplicate is made by renaming a key to one of equal length
        byte[] twoKeys = new GgufWriter().putU32("k1", 1).putU32("k2", 2).toBytes();
        int k2 = indexOf(twoKeys, "k2");
        String m = refusal(edit(twoKeys, b -> b.put(k2 + 1, (byte) '1')));
        assertTrue(m.contains("metadata 'k1' appears twice (metadata keys 0 and 1)"), m);
        byte[] twoTensors = new GgufWriter().add("t1", GgmlType.F32, new long[] {1}, new float[] {1})
                .add("t2", GgmlType.F32, new long[] {1}, new float[] {2}).toBytes();
        int t2 = indexOf(twoTensors, "t2");
        m = refusal(edit(twoTensors, b -> b.put(t2 + 1, (byte) '1')));
        assertTrue(m.contains("tensor 't1' appears twice in the tensor table"), m);
    }

    @Test
    void refusesBadTensorEntries() {
        byte[] good = small().toBytes();
        // after the name "w": u32 n_dims, then ne[0], ne[1], u32 type, u64 offset
        int nDims = indexOf(good, "w") + 1;
        assertTrue(refusal(edit(good, b -> b.putInt(nDims, 5))).contains("tensor 'w': field 'n_dims' is 5, expected 1 to 4"));
        assertTrue(refusal(edit(good, b -> b.putInt(nDims, 0))).contains("tensor 'w': field 'n_dims' is 0, expected 1 to 4"));
        assertTrue(refusal(edit(good, b -> b.putLong(nDims + 4, -2L))).contains("tensor 'w': dimension ne[0] is 18446744073709551614"));
        assertTrue(refusal(edit(good, b -> b.putInt(nDims + 20, 3))).contains(
                "tensor 'w': type Q4_1 (ggml type 3) is not supported, expected one of F32, F16, Q4_0, Q8_0, Q4_K, Q5_K, Q6_K, BF16"));
        assertTrue(refusal(edit(good, b -> b.putInt(nDims + 20, 8))).contains(
                "tensor 'w': row length ne[0] = 2 is not a multiple of 32, the Q8_0 block size"));
        assertTrue(refusal(edit(good, b -> b.putLong(nDims + 4, 1L << 40).putLong(nDims + 12, 1L << 40))).contains(
                "hold more bytes than fit in 64 bits"));
        assertTrue(refusal(edit(good, b -> b.putLong(nDims + 24, 32))).contains(
                "tensor 'w': field 'offset' is 32, expected 0 (tensors lie in table order, each padded to the alignment 32)"));
        String longName = "n".repeat(64);
        assertTrue(refusal(new GgufWriter().add(longName, GgmlType.F32, new long[] {1}, new float[] {1}))
                .contains("tensor 0 name is 64 bytes long, expected at most 63"));
    }

    @Test
    void refusesTruncatedDataAndTrailingBytes() {
        byte[] good = small().toBytes();
        byte[] cut = java.util.Arrays.copyOf(good, good.length - 40);
        String m = refusal(cut);
        assertTrue(m.contains("tensor 'h': its 10 bytes from byte") && m.contains("the file is truncated"), m);
        byte[] longer = java.util.Arrays.copyOf(good, good.length + 32);
        m = refusal(longer);
        assertTrue(m.contains("trailing bytes: the data section ends at byte " + good.length), m);
    }

    @Test
    void refusesABadAlignment() {
        String m = refusal(small().alignment(48));
        assertTrue(m.contains("metadata 'general.alignment' is 48, expected a power of 2"), m);
        m = refusal(small().putF32(GgufFile.ALIGNMENT_KEY, 32));
        assertTrue(m.contains("metadata 'general.alignment' is a FLOAT32, expected a UINT32"), m);
    }

    @Test
    void refusesInvalidUtf8() {
        byte[] good = small().toBytes();
        int at = indexOf(good, "general.architecture");
        assertTrue(refusal(edit(good, b -> b.put(at, (byte) 0xC3))).contains("metadata key 0 at byte"));
    }

    @Test
    void typedReadsNameTheKeyAndTheTypes() {
        GgufFile f = GgufFile.read(write(small()));
        GgufFormatException e = assertThrows(GgufFormatException.class, () -> f.meta().string("llama.block_count"));
        assertTrue(e.getMessage().endsWith("metadata 'llama.block_count' is a UINT32 (2), expected a STRING"), e.getMessage());
        e = assertThrows(GgufFormatException.class, () -> f.meta().integer("llama.block_count", 3, 9));
        assertTrue(e.getMessage().endsWith("metadata 'llama.block_count' is 2, expected 3 to 9"), e.getMessage());
    }
}
