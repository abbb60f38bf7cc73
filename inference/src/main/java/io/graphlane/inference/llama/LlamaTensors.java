package io.graphlane.inference.llama;

import io.graphlane.checkpoint.config.MoeConfig;
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

    /**
     * One tensor a stage reads, as a matrix of {@code rows × cols} ({@code 1 × n} for a vector). Where the checkpoint
     * fuses it with others (Phi-3's {@code qkv_proj}, {@code gate_up_proj}), {@code fused} names the checkpoint tensor and
     * the rows of it this one is; the loaders read it through a derived-weight recipe that selects those rows.
     */
    public record Expected(String name, int rows, int cols, boolean vector, FusedRows fused) {
        /** A tensor the checkpoint holds under its own name. */
        public Expected(String name, int rows, int cols, boolean vector) {
            this(name, rows, cols, vector, null);
        }

        /** The shape the stage reads: {@code [n]} for a vector, {@code [rows, cols]} otherwise. */
        public long[] checkpointShape() {
            return vector ? new long[] {cols} : new long[] {rows, cols};
        }

        /** True when this tensor is rows of a fused checkpoint tensor. */
        public boolean isFused() {
            return fused != null;
        }

        /** The checkpoint tensor this one is read from: its own name, or the fused tensor's. */
        public String sourceName() {
            return fused == null ? name : fused.tensor();
        }

        /** The same tensor (same source rows) under the shape of a part of it; {@code name} kept. */
        public Expected withShape(int partRows, int partCols) {
            return new Expected(name, partRows, partCols, vector, fused);
        }
    }

    /** Rows {@code [start, end)} of the checkpoint matrix {@code tensor} (of {@code totalRows} rows). */
    public record FusedRows(String tensor, long totalRows, long start, long end) {
    }

    /**
     * The recipe that reads {@code expected} from {@code source}: the tensor itself (or the weight the source derives
     * under its name, such as a GGUF file's), or (fused) a selection of rows of the fused tensor, pushed down to the
     * lease so only those rows are read.
     */
    public static io.graphlane.checkpoint.recipe.Recipe recipe(io.graphlane.checkpoint.CheckpointSource source, Expected expected) {
        io.graphlane.checkpoint.recipe.Recipe whole = source.recipe(expected.sourceName());
        return expected.isFused() ? whole.slice(0, expected.fused().start(), expected.fused().end()) : whole;
    }

    /** The router of sparse layer {@code l}, then each expert's gate, up and down projections, by expert index. */
    public static List<Expected> forSparseBlock(LlamaConfig c, int l) {
        MoeConfig moe = c.moe();
        List<Expected> expected = new ArrayList<>(1 + 3 * moe.expertCount());
        expected.add(new Expected(moe.routerName(l), moe.expertCount(), c.hiddenSize(), false));
        for (int e = 0; e < moe.expertCount(); e++) {
            expected.addAll(forExpert(c, l, e));
        }
        return expected;
    }

    /** Expert {@code e} of sparse layer {@code l}: its gate, up and down projections (one atomic bind unit). */
    public static List<Expected> forExpert(LlamaConfig c, int l, int e) {
        MoeConfig moe = c.moe();
        int h = c.hiddenSize();
        int width = moe.expertIntermediateSize();
        return List.of(new Expected(moe.gateName(l, e), width, h, false), new Expected(moe.upName(l, e), width, h, false),
                new Expected(moe.downName(l, e), h, width, false));
    }

    /**
     * The expert a tensor of {@code c} belongs to, as {@code {layer, expert}}, or null for a tensor of no expert (the
     * router included).
     */
    public static int[] expertOf(LlamaConfig c, String name) {
        if (c.moe() == null) {
            return null;
        }
        java.util.regex.Matcher m = EXPERT.matcher(name);
        return m.matches() ? new int[] {Integer.parseInt(m.group(1)), Integer.parseInt(m.group(2))} : null;
    }

    private static final java.util.regex.Pattern EXPERT =
            java.util.regex.Pattern.compile("model\\.layers\\.(\\d+)\\.(?:block_sparse_moe|mlp)\\.experts\\.(\\d+)\\..*");

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
        List<Expected> expected = new ArrayList<>(20);
        int h = c.hiddenSize();
        int q = c.queryWidth();
        int kv = c.kvWidth();
        int inter = c.intermediateSize();
        expected.add(new Expected(layer(l, "input_layernorm.weight"), 1, h, true));
        if (c.fusedProjections()) {
            String qkv = layer(l, "self_attn.qkv_proj.weight");
            long rows = q + 2L * kv;
            expected.add(new Expected(layer(l, "self_attn.q_proj.weight"), q, h, false, new FusedRows(qkv, rows, 0, q)));
            expected.add(new Expected(layer(l, "self_attn.k_proj.weight"), kv, h, false, new FusedRows(qkv, rows, q, q + kv)));
            expected.add(new Expected(layer(l, "self_attn.v_proj.weight"), kv, h, false, new FusedRows(qkv, rows, q + kv, rows)));
        } else {
            expected.add(new Expected(layer(l, "self_attn.q_proj.weight"), q, h, false));
            expected.add(new Expected(layer(l, "self_attn.k_proj.weight"), kv, h, false));
            expected.add(new Expected(layer(l, "self_attn.v_proj.weight"), kv, h, false));
        }
        expected.add(new Expected(layer(l, "self_attn.o_proj.weight"), h, q, false));
        if (c.qkvBias()) {
            expected.add(new Expected(layer(l, "self_attn.q_proj.bias"), 1, q, true));
            expected.add(new Expected(layer(l, "self_attn.k_proj.bias"), 1, kv, true));
            expected.add(new Expected(layer(l, "self_attn.v_proj.bias"), 1, kv, true));
        }
        if (c.outputBias()) {
            expected.add(new Expected(layer(l, "self_attn.o_proj.bias"), 1, h, true));
        }
        if (c.qkNorm()) {
            expected.add(new Expected(layer(l, "self_attn.q_norm.weight"), 1, c.headDim(), true));
            expected.add(new Expected(layer(l, "self_attn.k_norm.weight"), 1, c.headDim(), true));
        }
        // Llama's pre-MLP norm; for Gemma the norm of the attention output, followed by its pre- and post-MLP norms
        expected.add(new Expected(layer(l, "post_attention_layernorm.weight"), 1, h, true));
        if (c.normsBlockOutputs()) {
            expected.add(new Expected(layer(l, "pre_feedforward_layernorm.weight"), 1, h, true));
            expected.add(new Expected(layer(l, "post_feedforward_layernorm.weight"), 1, h, true));
        }
        if (c.isSparse(l)) {
            expected.addAll(forSparseBlock(c, l));
            return expected;
        }
        if (c.fusedProjections()) {
            // Phi-3's gate_up_proj: the gate's rows, then the up projection's
            String gateUp = layer(l, "mlp.gate_up_proj.weight");
            expected.add(new Expected(layer(l, "mlp.gate_proj.weight"), inter, h, false, new FusedRows(gateUp, 2L * inter, 0, inter)));
            expected.add(new Expected(layer(l, "mlp.up_proj.weight"), inter, h, false,
                    new FusedRows(gateUp, 2L * inter, inter, 2L * inter)));
        } else {
            expected.add(new Expected(layer(l, "mlp.gate_proj.weight"), inter, h, false));
            expected.add(new Expected(layer(l, "mlp.up_proj.weight"), inter, h, false));
        }
        expected.add(new Expected(layer(l, "mlp.down_proj.weight"), h, inter, false));
        if (c.mlpBias()) {
            expected.add(new Expected(layer(l, "mlp.gate_proj.bias"), 1, inter, true));
            expected.add(new Expected(layer(l, "mlp.up_proj.bias"), 1, inter, true));
            expected.add(new Expected(layer(l, "mlp.down_proj.bias"), 1, h, true));
        }
        return expected;
    }
}
