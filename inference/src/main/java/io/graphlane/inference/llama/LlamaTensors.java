package io.graphlane.inference.llama;

import io.graphlane.inference.stage.StageSpec;
import java.util.ArrayList;
import java.util.List;

/** The Hugging Face tensor names of the Llama family, and the ones (with their shapes) a stage reads. */
public final class LlamaTensors {
    /** The token embedding, {@code vocab × hidden}. */
    public static final String EMBEDDING = "model.embed_tokens.weight";
    /** The final RMSNorm weight, {@code hidden}. */
    public static final String FINAL_NORM = "model.norm.weight";
    /** The untied head, {@code vocab × hidden}. */
    public static final String LM_HEAD = "lm_head.weight";

    private LlamaTensors() {
    }

    /** One tensor a stage reads, as a matrix of {@code rows × cols} ({@code 1 × n} for a vector). */
    public record Expected(String name, int rows, int cols, boolean vector) {
        /** The shape as the checkpoint stores it: {@code [n]} for a vector, {@code [rows, cols]} otherwise. */
        public long[] checkpointShape() {
            return vector ? new long[] {cols} : new long[] {rows, cols};
        }
    }

    /** The name of {@code field} (such as {@code self_attn.q_proj.weight}) in decoder layer {@code layer}. */
    public static String layer(int layer, String field) {
        return "model.layers." + layer + "." + field;
    }

    /** Every tensor {@code stage} reads, with its shape; the head comes from the embedding when tied. */
    public static List<Expected> forStage(LlamaConfig c, StageSpec stage) {
        List<Expected> expected = new ArrayList<>();
        if (stage.isFirst()) {
            expected.add(new Expected(EMBEDDING, c.vocabSize(), c.hiddenSize(), false));
        }
        for (int l = stage.layers().start(); l < stage.layers().end(); l++) {
            expected.addAll(forLayer(c, l));
        }
        if (stage.isLast()) {
            expected.add(new Expected(FINAL_NORM, 1, c.hiddenSize(), true));
            String head = c.tieWordEmbeddings() ? EMBEDDING : LM_HEAD;
            if (!(stage.isFirst() && c.tieWordEmbeddings())) {
                expected.add(new Expected(head, c.vocabSize(), c.hiddenSize(), false));
            }
        }
        return expected;
    }

    /** The tensors of decoder layer {@code l}, in {@link LayerWeights} order. */
    public static List<Expected> forLayer(LlamaConfig c, int l) {
        List<Expected> expected = new ArrayList<>(12);
        expected.add(new Expected(layer(l, "input_layernorm.weight"), 1, c.hiddenSize(), true));
        expected.add(new Expected(layer(l, "self_attn.q_proj.weight"), c.queryWidth(), c.hiddenSize(), false));
        expected.add(new Expected(layer(l, "self_attn.k_proj.weight"), c.kvWidth(), c.hiddenSize(), false));
        expected.add(new Expected(layer(l, "self_attn.v_proj.weight"), c.kvWidth(), c.hiddenSize(), false));
        expected.add(new Expected(layer(l, "self_attn.o_proj.weight"), c.hiddenSize(), c.queryWidth(), false));
        if (c.qkvBias()) {
            expected.add(new Expected(layer(l, "self_attn.q_proj.bias"), 1, c.queryWidth(), true));
            expected.add(new Expected(layer(l, "self_attn.k_proj.bias"), 1, c.kvWidth(), true));
            expected.add(new Expected(layer(l, "self_attn.v_proj.bias"), 1, c.kvWidth(), true));
        }
        if (c.outputBias()) {
            expected.add(new Expected(layer(l, "self_attn.o_proj.bias"), 1, c.hiddenSize(), true));
        }
        expected.add(new Expected(layer(l, "post_attention_layernorm.weight"), 1, c.hiddenSize(), true));
        expected.add(new Expected(layer(l, "mlp.gate_proj.weight"), c.intermediateSize(), c.hiddenSize(), false));
        expected.add(new Expected(layer(l, "mlp.up_proj.weight"), c.intermediateSize(), c.hiddenSize(), false));
        expected.add(new Expected(layer(l, "mlp.down_proj.weight"), c.hiddenSize(), c.intermediateSize(), false));
        return expected;
    }
}
