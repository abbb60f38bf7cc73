package io.graphlane.checkpoint.gguf;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.graphlane.checkpoint.CheckpointSource;
import io.graphlane.checkpoint.Fixtures;
import io.graphlane.checkpoint.recipe.DerivedWeight;
import io.graphlane.checkpoint.recipe.HalfPrecision;
import io.graphlane.core.tensor.DType;
import io.graphlane.core.tensor.TensorSpec;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Path;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * tiny-llama written as GGUF (llama.cpp's names, permuted q/k rows) and read back as Hugging Face
 * weights: F32 gives the fixture's bytes exactly, F16/BF16 its values rounded once, and the quantized
 * types values within the format's error, each equal to ggml's decoding of the written blocks.
 */
class GgufRoundTripTest {
    @TempDir
    Path tmp;

    private static float[] floats(ByteBuffer b) {
        ByteBuffer d = b.duplicate().order(ByteOrder.LITTLE_ENDIAN);
        float[] v = new float[d.remaining() / 4];
        for (int i = 0; i < v.length; i++) {
            v[i] = d.getFloat(d.position() + 4 * i);
        }
        return v;
    }

    private static Map<String, DerivedWeight> weights(GgufCheckpoint c, CheckpointSource src) {
        Map<String, DerivedWeight> w = c.weights(src);
        assertEquals(TinyLlamaGguf.fixtureTensors().keySet(), w.keySet(), "every fixture tensor, under its Hugging Face name");
        return w;
    }

    @Test
    void f32RoundTripsToTheFixturesBytes() {
        GgufCheckpoint c = GgufCheckpoint.open(TinyLlamaGguf.write(GgmlType.F32, tmp.resolve("f32/model.gguf")));
        try (CheckpointSource gguf = c.openSource(); CheckpointSource st = CheckpointSource.open(Fixtures.tinyLlama(""))) {
            for (Map.Entry<String, DerivedWeight> e : weights(c, gguf).entrySet()) {
                DerivedWeight w = e.getValue();
                assertEquals(st.spec(e.getKey(), io.graphlane.checkpoint.Selection.all()), w.output(), e.getKey());
                var lease = st.lease(e.getKey());
                try {
                    assertArrayEquals(Fixtures.bytes(lease.bytes()), Fixtures.bytes(w.evaluateToBuffer()), e.getKey());
                } finally {
                    lease.release();
                }
            }
            assertEquals(0, gguf.openLeaseCount());
        }
    }

    @Test
    void halfPrecisionRoundTripsRoundOnce() {
        for (GgmlType type : new GgmlType[] {GgmlType.F16, GgmlType.BF16}) {
            GgufCheckpoint c = GgufCheckpoint.open(TinyLlamaGguf.write(type, tmp.resolve(type + "/model.gguf")));
            Map<String, TinyLlamaGguf.Tensor> fixture = TinyLlamaGguf.fixtureTensors();
            try (CheckpointSource src = c.openSource()) {
                for (Map.Entry<String, DerivedWeight> e : weights(c, src).entrySet()) {
                    TinyLlamaGguf.Tensor t = fixture.get(e.getKey());
                    assertEquals(new TensorSpec(type.dtype().orElseThrow(), t.shape()), e.getValue().output(), e.getKey());
                    ByteBuffer got = e.getValue().evaluateToBuffer().order(ByteOrder.LITTLE_ENDIAN);
                    for (int i = 0; i < t.values().length; i++) {
                        short expected = type == GgmlType.F16 ? HalfPrecision.f32ToF16(t.values()[i])
                                : HalfPrecision.f32ToBf16(t.values()[i]);
                        assertEquals(expected, got.getShort(2 * i), e.getKey() + "[" + i + "]");
                    }
                }
            }
        }
    }

    /** Checks each quantized weight against the fixture within {@code step × block amax} and against ggml's decoding. */
    private void quantizedRoundTrip(GgmlType type, float step) {
        GgufCheckpoint c = GgufCheckpoint.open(TinyLlamaGguf.write(type, tmp.resolve(type + "/model.gguf")));
        Map<String, TinyLlamaGguf.Tensor> fixture = TinyLlamaGguf.fixtureTensors();
        int quantized = 0;
        try (CheckpointSource src = c.openSource()) {
            for (Map.Entry<String, DerivedWeight> e : weights(c, src).entrySet()) {
                TinyLlamaGguf.Tensor t = fixture.get(e.getKey());
                String gguf = GgufTensorNames.fromHf("llama", e.getKey()).orElseThrow();
                GgufTensorInfo info = c.file().tensor(gguf);
                assertEquals(new TensorSpec(DType.F32, t.shape()), e.getValue().output(), e.getKey());
                float[] got = floats(e.getValue().evaluateToBuffer());
                if (info.type() != type) {
                    assertArrayEquals(t.values(), got, e.getKey() + " kept F32");
                    continue;
                }
                quantized++;
                int block = type.blockValues();
                for (int b = 0; b < got.length / block; b++) {
                    float amax = 0;
                    for (int i = 0; i < block; i++) {
                        amax = Math.max(amax, Math.abs(t.values()[b * block + i]));
                    }
                    for (int i = 0; i < block; i++) {
                        int at = b * block + i;
                        assertEquals(t.values()[at], got[at], amax * step, e.getKey() + "[" + at + "]");
                    }
                }
                if (!gguf.contains("attn_q") && !gguf.contains("attn_k")) {
                    // unpermuted rows: the derived weight is exactly ggml's decoding of the blocks the writer wrote
                    byte[] blocks = GgufWriter.encode(type, t.values(), (int) info.rowLength());
                    ByteBuffer decoded = ByteBuffer.allocate(got.length * 4).order(ByteOrder.LITTLE_ENDIAN);
                    type.decode(ByteBuffer.wrap(blocks), 0, blocks.length / type.blockBytes(), decoded, 0);
                    assertArrayEquals(floats(decoded), got, e.getKey());
                }
            }
        }
        assertTrue(quantized >= 4 * 6 + 2, quantized + " tensors quantized");
    }

    @Test
    void q8_0RoundTripsWithinHalfAStep() {
        // step amax/127, error at most half of it plus the F16 rounding of the scale
        quantizedRoundTrip(GgmlType.Q8_0, 1f / 127);
    }

    @Test
    void q4_0RoundTripsWithinAStep() {
        // step amax/8; the value opposite the block's extreme clamps to level 15, one step off
        quantizedRoundTrip(GgmlType.Q4_0, 1.01f / 8);
    }

    @Test
    void q4_KRoundTripsWithinTheFormatsError() {
        int rows = 4;
        int cols = 512;
        float[] v = new float[rows * cols];
        for (int i = 0; i < v.length; i++) {
            v[i] = (float) (Math.sin(i * 0.37) * (1 + (i % 7)) * 0.1);
        }
        Path file = new GgufWriter().put("general.architecture", "qwen2")
                .add("blk.0.ffn_up.weight", GgmlType.Q4_K, new long[] {rows, cols}, v)
                .write(tmp.resolve("q4k.gguf"));
        GgufCheckpoint c = GgufCheckpoint.open(file);
        try (CheckpointSource src = c.openSource()) {
            DerivedWeight w = c.weight(src, "model.layers.0.mlp.up_proj.weight");
            assertEquals(TensorSpec.of(DType.F32, rows, cols), w.output());
            float[] got = floats(w.evaluateToBuffer());
            for (int s = 0; s < v.length / 32; s++) {
                float lo = 0;
                float hi = -Float.MAX_VALUE;
                for (int l = 0; l < 32; l++) {
                    lo = Math.min(lo, v[32 * s + l]);
                    hi = Math.max(hi, v[32 * s + l]);
                }
                for (int l = 0; l < 32; l++) {
                    // a 4-bit level of the sub-block's range, plus the 6-bit quantization of scale and min
                    assertEquals(v[32 * s + l], got[32 * s + l], (hi - lo) / 15f + 0.02f, "value " + (32 * s + l));
                }
            }
            // a range of rows and a block-aligned range of columns read only their blocks, and equal the same slice of the whole
            DerivedWeight part = w.shard(1, 256, 512).shard(0, 1, 3);
            float[] sliced = floats(part.evaluateToBuffer());
            for (int r = 0; r < 2; r++) {
                for (int k = 0; k < 256; k++) {
                    assertEquals(got[(r + 1) * cols + 256 + k], sliced[r * 256 + k]);
                }
            }
            // each range alone reaches the source: rows as rows of blocks, columns 256..512 as block bytes 144..288
            assertEquals("dequantize(Q4_K, source('blk.0.ffn_up.weight'[axis 0: 1..3)))", w.shard(0, 1, 3).recipe().toString());
            assertEquals("dequantize(Q4_K, source('blk.0.ffn_up.weight'[axis 1: 144..288)))", w.shard(1, 256, 512).recipe().toString());
        }
    }

    @Test
    void aShardOfAPermutedQuantizedProjectionIsTheSameRowsOfTheWhole() {
        GgufCheckpoint c = GgufCheckpoint.open(TinyLlamaGguf.write(GgmlType.Q8_0, tmp.resolve("tp/model.gguf")));
        try (CheckpointSource src = c.openSource()) {
            for (String name : new String[] {"model.layers.1.self_attn.q_proj.weight", "model.layers.1.self_attn.k_proj.weight"}) {
                DerivedWeight whole = c.weight(src, name);
                float[] all = floats(whole.evaluateToBuffer());
                long rows = whole.output().shape().dim(0);
                long cols = whole.output().shape().dim(1);
                float[] half = floats(whole.shard(0, rows / 2, rows).evaluateToBuffer());
                for (int i = 0; i < half.length; i++) {
                    assertEquals(all[(int) (rows / 2 * cols) + i], half[i], name + "[" + i + "]");
                }
                float[] cols16 = floats(whole.shard(1, 16, 48).evaluateToBuffer());
                for (int r = 0; r < rows; r++) {
                    for (int k = 0; k < 32; k++) {
                        assertEquals(all[(int) (r * cols) + 16 + k], cols16[r * 32 + k], name + " column " + (16 + k));
                    }
                }
            }
        }
    }

    @Test
    void theConfigOfTheWrittenFileIsTheFixturesConfig() {
        GgufCheckpoint c = GgufCheckpoint.open(TinyLlamaGguf.write(GgmlType.F32, tmp.resolve("cfg/model.gguf")));
        ObjectNode got;
        try (CheckpointSource src = c.openSource()) {
            got = c.hfConfig(src);
        }
        JsonNode want = TinyLlamaGguf.config();
        for (String key : new String[] {"hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads",
                "num_key_value_heads", "vocab_size", "max_position_embeddings", "tie_word_embeddings", "model_type"}) {
            assertEquals(want.get(key), got.get(key), key);
        }
        assertEquals(want.get("architectures"), got.get("architectures"));
        assertEquals(want.get("rms_norm_eps").asDouble(), got.get("rms_norm_eps").asDouble(), 1e-12);
        assertEquals(want.get("rope_theta").asDouble(), got.get("rope_theta").asDouble(), 0);
        assertTrue(!got.has("rope_scaling"));
    }
}
