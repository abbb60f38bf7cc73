package io.graphlane.checkpoint.config;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.graphlane.checkpoint.CheckpointException;
import io.graphlane.checkpoint.Fixtures;
import io.graphlane.checkpoint.ModelCheckpoint;
import io.graphlane.checkpoint.json.StrictJson;
import io.graphlane.checkpoint.safetensors.SafetensorsWriter;
import io.graphlane.core.tensor.DType;
import io.graphlane.core.tensor.Shape;
import io.graphlane.core.tensor.TensorSpec;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.Optional;
import java.util.function.Consumer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** config.json parsing and every config and architecture refusal of CHECKPOINTS.md. */
class ModelConfigTest {
    @TempDir
    Path tmp;

    private static final Path FILE = Path.of("m", "config.json");

    private static ObjectNode llama() {
        ObjectNode c = StrictJson.mapper().createObjectNode();
        c.putArray("architectures").add("LlamaForCausalLM");
        c.put("hidden_size", 64).put("intermediate_size", 172).put("num_hidden_layers", 2)
                .put("num_attention_heads", 4).put("num_key_value_heads", 2).put("vocab_size", 256)
                .put("max_position_embeddings", 128).put("rms_norm_eps", 1e-5).put("rope_theta", 500000.0)
                .put("torch_dtype", "bfloat16");
        return c;
    }

    private static ModelConfig parse(ObjectNode c) {
        return ModelConfig.parse(FILE, c.toString());
    }

    private static void refused(ObjectNode c, String... fragments) {
        ModelConfigException e = assertThrows(ModelConfigException.class, () -> parse(c));
        assertTrue(e.getMessage().startsWith(FILE + ": "), e.getMessage());
        for (String f : fragments) {
            assertTrue(e.getMessage().contains(f), "expected '" + f + "' in: " + e.getMessage());
        }
    }

    private static ObjectNode edit(Consumer<ObjectNode> change) {
        ObjectNode c = llama();
        change.accept(c);
        return c;
    }

    @Test
    void fixtureConfigParsesWithEveryField() {
        ModelConfig c = ModelConfig.read(Fixtures.tinyLlama("").resolve("config.json"));
        assertEquals(Architecture.LLAMA, c.architecture());
        assertEquals(64, c.hiddenSize());
        assertEquals(172, c.intermediateSize());
        assertEquals(4, c.numHiddenLayers());
        assertEquals(4, c.numAttentionHeads());
        assertEquals(2, c.numKeyValueHeads());
        assertEquals(16, c.headDim());
        assertEquals(256, c.vocabSize());
        assertEquals(256, c.maxPositionEmbeddings());
        assertEquals(1e-5, c.rmsNormEps());
        assertEquals(10000.0, c.ropeTheta());
        assertEquals(false, c.tieWordEmbeddings());
        assertEquals(Optional.of("float32"), c.torchDtype());
    }

    @Test
    void defaultsApplyWhenOptionalFieldsAreAbsent() {
        ModelConfig c = parse(edit(o -> {
            o.remove("num_key_value_heads");
            o.remove("rms_norm_eps");
            o.remove("rope_theta");
            o.remove("torch_dtype");
            o.put("head_dim", 32);
        }));
        assertEquals(4, c.numKeyValueHeads());
        assertEquals(1e-6, c.rmsNormEps());
        assertEquals(10000.0, c.ropeTheta());
        assertEquals(32, c.headDim());
        assertEquals(Optional.empty(), c.torchDtype());
        assertEquals(Architecture.MISTRAL, parse(edit(o -> o.putArray("architectures").add("MistralForCausalLM"))).architecture());
        assertEquals(Architecture.QWEN2, parse(edit(o -> {
            o.remove("architectures");
            o.put("model_type", "qwen2");
        })).architecture());
    }

    @Test
    void missingOrNonPositiveSizes() {
        for (String field : new String[] {"hidden_size", "intermediate_size", "num_hidden_layers",
                "num_attention_heads", "vocab_size", "max_position_embeddings"}) {
            refused(edit(o -> o.remove(field)), "field '" + field + "' is missing");
            refused(edit(o -> o.put(field, 0)), "field '" + field + "' is 0, expected a positive integer");
            refused(edit(o -> o.put(field, -4)), "field '" + field + "' is -4");
        }
        refused(edit(o -> o.put("hidden_size", "64")), "field 'hidden_size' is \"64\", expected a positive integer");
        refused(edit(o -> o.put("hidden_size", 64.5)), "field 'hidden_size' is 64.5");
        refused(edit(o -> o.put("num_key_value_heads", 0)), "field 'num_key_value_heads' is 0");
        refused(edit(o -> o.put("rms_norm_eps", -1.0)), "field 'rms_norm_eps' is -1", "expected a positive number");
        refused(edit(o -> o.put("tie_word_embeddings", "yes")), "field 'tie_word_embeddings'", "expected true or false");
    }

    @Test
    void headsNotDividingHiddenSize() {
        refused(edit(o -> o.put("num_attention_heads", 6)),
                "field 'num_attention_heads' (6) does not divide field 'hidden_size' (64)");
    }

    @Test
    void kvHeadsNotDividingHeads() {
        refused(edit(o -> o.put("num_key_value_heads", 3)),
                "field 'num_key_value_heads' (3) does not divide field 'num_attention_heads' (4)");
    }

    @Test
    void unsupportedArchitectureNamesTheSupportedOnes() {
        refused(edit(o -> o.putArray("architectures").add("GPT2LMHeadModel")),
                "[\"GPT2LMHeadModel\"] names no supported architecture",
                "LlamaForCausalLM, MistralForCausalLM, Qwen2ForCausalLM, Qwen3ForCausalLM, Phi3ForCausalLM");
        refused(edit(o -> {
            o.remove("architectures");
            o.put("model_type", "gpt2");
        }), "'model_type' \"gpt2\" is not supported", "LlamaForCausalLM");
        refused(edit(o -> o.putArray("architectures")), "non-empty array");
    }

    @Test
    void notJsonOrMissingFile() throws IOException {
        assertThrows(ModelConfigException.class, () -> ModelConfig.parse(FILE, "{\"hidden_size\": 1, \"hidden_size\": 2}"));
        ModelConfigException e = assertThrows(ModelConfigException.class, () -> ModelConfig.read(tmp.resolve("config.json")));
        assertTrue(e.getMessage().contains("missing"), e.getMessage());
        Files.writeString(tmp.resolve("config.json"), "[]");
        assertThrows(ModelConfigException.class, () -> ModelConfig.read(tmp.resolve("config.json")));
    }

    /** A model directory holding exactly the tensors {@code config} expects (zeros), with {@code change} applied. */
    private Path model(ObjectNode config, Consumer<Map<String, Shape>> change) throws IOException {
        Path dir = Files.createDirectories(tmp.resolve("model" + System.nanoTime()));
        Files.writeString(dir.resolve("config.json"), config.toString());
        Map<String, Shape> tensors = new java.util.LinkedHashMap<>(ModelTensors.expected(parse(config)));
        change.accept(tensors);
        SafetensorsWriter w = new SafetensorsWriter();
        tensors.forEach((name, shape) -> w.add(name, new TensorSpec(DType.BF16, shape),
                ByteBuffer.allocate((int) shape.byteSize(DType.BF16))));
        w.write(dir.resolve("model.safetensors"));
        return dir;
    }

    private static void modelRefused(Path dir, String... fragments) {
        CheckpointException e = assertThrows(CheckpointException.class, () -> ModelCheckpoint.open(dir));
        for (String f : fragments) {
            assertTrue(e.getMessage().contains(f), "expected '" + f + "' in: " + e.getMessage());
        }
    }

    @Test
    void completeCheckpointsOfEachArchitectureLoad() throws IOException {
        assertEquals(2 * 9 + 3, ModelCheckpoint.open(model(llama(), t -> { })).catalog().tensors().size());
        ObjectNode qwen = edit(o -> {
            o.putArray("architectures").add("Qwen2ForCausalLM");
            o.put("tie_word_embeddings", true);
        });
        ModelCheckpoint q = ModelCheckpoint.open(model(qwen, t -> { }));
        assertEquals(2 * 12 + 2, q.catalog().tensors().size());
        assertTrue(q.catalog().contains("model.layers.1.self_attn.k_proj.bias"));
        assertEquals(Shape.of(32), q.catalog().tensor("model.layers.1.self_attn.k_proj.bias").spec().shape());
        ModelCheckpoint.open(Fixtures.tinyLlama(""));
        ModelCheckpoint.open(Fixtures.tinyLlama("bf16"));
        ModelCheckpoint.open(Fixtures.tinyLlama("sharded"));
    }

    @Test
    void missingTensorIsNamedWithItsExpectedShape() throws IOException {
        modelRefused(model(llama(), t -> t.remove("lm_head.weight")),
                "missing 1 tensor that LlamaForCausalLM needs: lm_head.weight", "expected shape [256, 64]");
        ObjectNode qwen = edit(o -> o.putArray("architectures").add("Qwen2ForCausalLM"));
        Path llamaTensorsUnderQwenConfig = model(llama(), t -> { });
        Files.writeString(llamaTensorsUnderQwenConfig.resolve("config.json"), qwen.toString());
        modelRefused(llamaTensorsUnderQwenConfig, "missing 6 tensors that Qwen2ForCausalLM needs",
                "model.layers.0.self_attn.q_proj.bias");
    }

    @Test
    void wrongShapeNamesExpectedAndFound() throws IOException {
        modelRefused(model(llama(), t -> t.put("model.layers.1.self_attn.k_proj.weight", Shape.of(64, 64))),
                "tensor 'model.layers.1.self_attn.k_proj.weight'", "has shape [64, 64], expected [32, 64]");
        modelRefused(model(llama(), t -> t.put("model.norm.weight", Shape.of(65))), "has shape [65], expected [64]");
    }

    /** A config.json claiming far more layers than the checkpoint holds is refused before anything per layer is built. */
    @Test
    void aLayerCountTheCheckpointCannotHoldIsRefusedAtOnce() throws IOException {
        Path dir = model(llama(), t -> { });
        for (int layers : new int[] {3, 1_000_000, Integer.MAX_VALUE}) {
            Files.writeString(dir.resolve("config.json"), edit(o -> o.put("num_hidden_layers", layers)).toString());
            // Building 2^31-1 layers' tensor names first would run out of memory long before any check.
            modelRefused(dir, "config.json's field 'num_hidden_layers' is " + layers,
                    "the checkpoint holds tensors of 2 layers (none of layer 2, e.g. model.layers.2.self_attn.q_proj.weight)");
        }
        modelRefused(model(llama(), t -> t.keySet().removeIf(n -> n.startsWith("model.layers.0."))),
                "'num_hidden_layers' is 2, but the checkpoint holds tensors of 1 layer (none of layer 0");
    }

    @Test
    void tensorOfALayerBeyondTheConfigIsContradictory() throws IOException {
        modelRefused(model(llama(), t -> t.put("model.layers.2.input_layernorm.weight", Shape.of(64))),
                "'model.layers.2.input_layernorm.weight'", "belongs to layer 2", "num_hidden_layers 2");
    }

    @Test
    void integerWeightsAreRefused() throws IOException {
        Path dir = model(llama(), t -> t.remove("model.norm.weight"));
        // rewrite with an I32 final norm of the right shape
        SafetensorsWriter w = new SafetensorsWriter();
        ModelTensors.expected(parse(llama())).forEach((name, shape) -> {
            DType d = name.equals("model.norm.weight") ? DType.I32 : DType.F32;
            w.add(name, new TensorSpec(d, shape), ByteBuffer.allocate((int) shape.byteSize(d)));
        });
        w.write(dir.resolve("model.safetensors"));
        modelRefused(dir, "'model.norm.weight'", "dtype I32, expected a floating-point dtype");
    }

    /** Each refusal the issue asks for is one line naming the architecture, field or tensor. */
    private static void oneLine(Exception e) {
        assertEquals(1, e.getMessage().lines().count(), e.getMessage());
    }

    @Test
    void anUnknownArchitectureIsRefusedNamingItAndTheSupportedOnes() {
        ModelConfigException e = assertThrows(ModelConfigException.class,
                () -> parse(edit(o -> o.putArray("architectures").add("FalconForCausalLM"))));
        oneLine(e);
        assertTrue(e.getMessage().contains("FalconForCausalLM") && e.getMessage().contains(
                "supported: LlamaForCausalLM, MistralForCausalLM, Qwen2ForCausalLM, Qwen3ForCausalLM, Phi3ForCausalLM"), e.getMessage());
        refused(edit(o -> o.putArray("architectures").add("Gemma3ForConditionalGeneration")),
                "names Gemma3ForConditionalGeneration, which graphlane does not run", "vision-language", "supported: LlamaForCausalLM");
    }

    @Test
    void anUnknownFieldIsRefusedNamingItAndHarmlessOnesAreNot() {
        ModelConfigException e = assertThrows(ModelConfigException.class, () -> parse(edit(o -> o.put("logits_scaling", 4.0))));
        oneLine(e);
        assertTrue(e.getMessage().contains("field 'logits_scaling' (4) is not one graphlane knows for LlamaForCausalLM"),
                e.getMessage());
        refused(edit(o -> o.putObject("quantization_config").put("quant_method", "gptq")), "field 'quantization_config'");
        refused(edit(o -> o.put("hidden_act", "relu")), "field 'hidden_act' is \"relu\"", "silu, gelu, gelu_new, gelu_pytorch_tanh");
        refused(edit(o -> o.put("use_mrope", true)), "field 'use_mrope' is true");
        refused(edit(o -> {
            o.putArray("architectures").add("MistralForCausalLM");
            o.put("mlp_bias", true);
        }), "field 'mlp_bias' is true, but MistralForCausalLM has no such option");
        ModelConfig c = parse(edit(o -> o.put("_name_or_path", "x").put("initializer_range", 0.02).put("attention_dropout", 0.0)
                .put("pretraining_tp", 1).put("use_cache", true).put("transformers_version", "4.57.6").put("hidden_act", "gelu")
                .put("mlp_bias", true)));
        assertEquals(io.graphlane.core.nn.GateActivation.GELU, c.hiddenAct());
        assertTrue(c.mlpBias());
    }

    @Test
    void sizesAreBoundedBeforeAnythingIsAllocated() {
        refused(edit(o -> o.put("vocab_size", 100_000_000)), "field 'vocab_size' is 100000000, over the limit of 4194304");
        refused(edit(o -> o.put("hidden_size", 1 << 20)), "field 'hidden_size' is 1048576, over the limit");
        refused(edit(o -> o.put("head_dim", 4096)), "field 'head_dim' is 4096, over the limit of 1024");
    }

    @Test
    void aTensorTheModelDoesNotUseIsRefusedNamingIt() throws IOException {
        Path dir = model(llama(), t -> t.put("model.layers.0.mlp.gate_proj.bias", Shape.of(172)));
        CheckpointException e = assertThrows(CheckpointException.class, () -> ModelCheckpoint.open(dir));
        oneLine(e);
        assertTrue(e.getMessage().contains("tensor 'model.layers.0.mlp.gate_proj.bias' in model.safetensors is not used by "
                + "LlamaForCausalLM with this config.json (attention_bias false, mlp_bias false"), e.getMessage());
        // with mlp_bias true the same tensors are the model's
        ModelCheckpoint.open(model(edit(o -> o.put("mlp_bias", true)), t -> { }));
        // the rotary frequencies older conversions saved are recomputed, as transformers recomputes them
        ModelCheckpoint.open(model(llama(), t -> t.put("model.layers.1.self_attn.rotary_emb.inv_freq", Shape.of(8))));
    }

    @Test
    void qwen3AndPhi3CheckpointsHoldTheirOwnTensors() throws IOException {
        ObjectNode qwen3 = edit(o -> {
            o.putArray("architectures").add("Qwen3ForCausalLM");
            o.put("head_dim", 32);
        });
        ModelCheckpoint q = ModelCheckpoint.open(model(qwen3, t -> { }));
        assertEquals(Shape.of(32), q.catalog().tensor("model.layers.1.self_attn.q_norm.weight").spec().shape());
        assertEquals(Shape.of(128, 64), q.catalog().tensor("model.layers.1.self_attn.q_proj.weight").spec().shape());
        ObjectNode phi3 = edit(o -> o.putArray("architectures").add("Phi3ForCausalLM"));
        ModelCheckpoint p = ModelCheckpoint.open(model(phi3, t -> { }));
        assertEquals(Shape.of(64 + 2 * 32, 64), p.catalog().tensor("model.layers.0.self_attn.qkv_proj.weight").spec().shape());
        assertEquals(Shape.of(2 * 172, 64), p.catalog().tensor("model.layers.0.mlp.gate_up_proj.weight").spec().shape());
        modelRefused(model(phi3, t -> t.put("model.layers.0.self_attn.q_proj.weight", Shape.of(64, 64))),
                "tensor 'model.layers.0.self_attn.q_proj.weight'", "is not used by Phi3ForCausalLM");
    }
}
