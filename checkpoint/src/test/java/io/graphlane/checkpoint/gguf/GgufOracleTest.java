package io.graphlane.checkpoint.gguf;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.graphlane.checkpoint.CheckpointSource;
import io.graphlane.checkpoint.Fixtures;
import io.graphlane.checkpoint.recipe.DerivedWeight;
import io.graphlane.checkpoint.recipe.Recipe;
import io.graphlane.core.param.EncodedLease;
import io.graphlane.core.tensor.DType;
import java.net.URISyntaxException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * graphlane's reader against a file written by llama.cpp's own Python package, gguf-py
 * ({@code src/test/resources/gguf/make_ggufpy_oracle.py} made it): its metadata reads as written, each
 * tensor decodes to exactly the F32 values gguf-py's independent implementation of ggml's layouts gives
 * (stored beside it as {@code NAME.expected}), and the test writer's Q8_0 and Q4_0 quantizers produce
 * the very bytes gguf-py's ports of ggml's reference quantizers produced.
 */
class GgufOracleTest {
    private static Path oracle() {
        try {
            return Path.of(GgufOracleTest.class.getResource("/gguf/ggufpy-oracle.gguf").toURI());
        } catch (URISyntaxException e) {
            throw new IllegalStateException(e);
        }
    }

    private static float[] f32(CheckpointSource src, String name) {
        EncodedLease lease = src.lease(name);
        try {
            ByteBuffer b = lease.bytes();
            float[] v = new float[b.remaining() / 4];
            for (int i = 0; i < v.length; i++) {
                v[i] = b.getFloat(4 * i);
            }
            return v;
        } finally {
            lease.release();
        }
    }

    @Test
    void metadataReadsAsWritten() {
        GgufFile f = GgufFile.read(oracle());
        GgufMetadata m = f.meta();
        assertEquals("llama", m.string("general.architecture").orElseThrow());
        assertEquals(7, m.integer("test.u32").getAsLong());
        assertEquals(-3, m.integer("test.i8").getAsLong());
        assertEquals(1L << 40, m.integer("test.u64").getAsLong());
        assertEquals(0.1, m.number("test.f64").getAsDouble());
        assertTrue(m.bool("test.bool").orElseThrow());
        assertArrayEquals(new String[] {"a", "\u2581b", "\u00e9"}, m.strings("test.strings").orElseThrow());
        GgufValue ints = m.numbers("test.ints").orElseThrow();
        assertEquals(List.of(1L, -2L, 3L), List.of(ints.longAt(0), ints.longAt(1), ints.longAt(2)));
        assertEquals("{{ messages }}", m.string("tokenizer.chat_template").orElseThrow());
    }

    @Test
    void everyTypeDecodesToGgufPysValues() {
        GgufCheckpoint c = GgufCheckpoint.open(oracle());
        int checked = 0;
        try (CheckpointSource src = c.openSource()) {
            for (String name : List.of("f32", "f16", "bf16", "q8_0", "q4_0", "q4_k", "q5_k", "q6_k")) {
                GgufTensorInfo t = c.file().tensor(name);
                Recipe r = Recipe.source(src, name);
                r = t.type().isQuantized() ? r.dequantize(t.type()) : r.cast(DType.F32);
                ByteBuffer b = DerivedWeight.of(name, r).evaluateToBuffer().order(ByteOrder.LITTLE_ENDIAN);
                float[] got = new float[b.remaining() / 4];
                for (int i = 0; i < got.length; i++) {
                    got[i] = b.getFloat(4 * i);
                }
                float[] expected = f32(src, name + ".expected");
                assertEquals(expected.length, got.length, name);
                for (int i = 0; i < got.length; i++) {
                    assertEquals(Float.floatToIntBits(expected[i]), Float.floatToIntBits(got[i]),
                            name + "[" + i + "]: expected " + expected[i] + ", found " + got[i]);
                }
                assertEquals(name.toUpperCase(java.util.Locale.ROOT), t.type().name());
                checked++;
            }
        }
        assertEquals(8, checked);
    }

    @Test
    void theTestWritersQuantizersMatchGgmlsReferenceQuantizersByteForByte() {
        GgufCheckpoint c = GgufCheckpoint.open(oracle());
        try (CheckpointSource src = c.openSource()) {
            for (GgmlType type : new GgmlType[] {GgmlType.Q8_0, GgmlType.Q4_0}) {
                String name = type.name().toLowerCase(java.util.Locale.ROOT);
                float[] source = f32(src, name + ".source");
                EncodedLease lease = src.lease(name);
                try {
                    assertArrayEquals(Fixtures.bytes(lease.bytes()), GgufWriter.encode(type, source, 64), name);
                } finally {
                    lease.release();
                }
            }
        }
    }
}
