package io.graphlane.checkpoint.config;

import com.fasterxml.jackson.databind.JsonNode;
import io.graphlane.checkpoint.json.StrictJson;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Objects;
import java.util.Optional;
import io.graphlane.core.nn.GateActivation;

/**
 * The validated Hugging Face {@code config.json} of a Llama-family model. Every size is positive,
 * the attention heads divide the hidden size and the key/value heads divide the attention heads;
 * optional fields have Hugging Face's defaults.
 *
 * @param architecture the supported architecture
 * @param hiddenSize width of the residual stream
 * @param intermediateSize width of the MLP
 * @param numHiddenLayers decoder layers
 * @param numAttentionHeads query heads
 * @param numKeyValueHeads key/value heads (defaults to the query heads)
 * @param headDim width of one head (defaults to hidden / heads)
 * @param vocabSize vocabulary size
 * @param maxPositionEmbeddings longest context the model was trained for
 * @param rmsNormEps RMS norm epsilon (default 1e-6)
 * @param ropeTheta rotary base (default 10000)
 * @param tieWordEmbeddings whether the head reuses the embedding (default false)
 * @param attentionBias whether q/k/v/o carry biases (Llama's {@code attention_bias}; default false)
 * @param torchDtype the dtype the config declares, if any
 * @param rope the rotary embedding (base, rotating share, scaling variant), from either transformers layout
 * @param hiddenAct the MLP's gate activation ({@code hidden_act}, default silu)
 * @param mlpBias whether the MLP projections carry biases ({@code mlp_bias}; default false)
 * @param gemma what Gemma 2 and Gemma 3 add to the layer; empty for the other architectures
 * @param moe the sparse mixture-of-experts block of Mixtral and Qwen3-MoE; empty for the other architectures
 */
public record ModelConfig(Architecture architecture, int hiddenSize, int intermediateSize, int numHiddenLayers,
                          int numAttentionHeads, int numKeyValueHeads, int headDim, int vocabSize,
                          int maxPositionEmbeddings, double rmsNormEps, double ropeTheta, boolean tieWordEmbeddings,
                          boolean attentionBias, Optional<String> torchDtype, RopeConfig rope, GateActivation hiddenAct,
                          boolean mlpBias, Optional<GemmaConfig> gemma, Optional<MoeConfig> moe) {
    /** The file name Hugging Face gives the model configuration. */
    public static final String FILE_NAME = "config.json";

    /** The largest config.json read, in bytes. */
    public static final long MAX_CONFIG_BYTES = 10_000_000L;

    /** Checks the invariants {@link #parse} established. */
    public ModelConfig {
        Objects.requireNonNull(architecture, "architecture");
        Objects.requireNonNull(torchDtype, "torchDtype");
        Objects.requireNonNull(rope, "rope");
        Objects.requireNonNull(hiddenAct, "hiddenAct");
        Objects.requireNonNull(gemma, "gemma");
        if (gemma.isPresent() != architecture.isGemma()) {
            throw new IllegalArgumentException(architecture.hfName() + (architecture.isGemma() ? " needs" : " has no") + " Gemma parameters");
        }
        Objects.requireNonNull(moe, "moe");
        if (moe.isPresent() != architecture.isMoe()) {
            throw new IllegalArgumentException(architecture.hfName() + (architecture.isMoe() ? " needs" : " has no") + " experts");
        }
    }

    /** A configuration of a non-Gemma architecture. */
    public ModelConfig(Architecture architecture, int hiddenSize, int intermediateSize, int numHiddenLayers,
                       int numAttentionHeads, int numKeyValueHeads, int headDim, int vocabSize,
                       int maxPositionEmbeddings, double rmsNormEps, double ropeTheta, boolean tieWordEmbeddings,
                       boolean attentionBias, Optional<String> torchDtype, RopeConfig rope, GateActivation hiddenAct,
                       boolean mlpBias) {
        this(architecture, hiddenSize, intermediateSize, numHiddenLayers, numAttentionHeads, numKeyValueHeads, headDim,
                vocabSize, maxPositionEmbeddings, rmsNormEps, ropeTheta, tieWordEmbeddings, attentionBias, torchDtype, rope,
                hiddenAct, mlpBias, Optional.empty(), Optional.empty());
    }

    /** A plain-RoPE, silu, bias-free configuration (the Llama 2 shape), for tests and generated models. */
    public ModelConfig(Architecture architecture, int hiddenSize, int intermediateSize, int numHiddenLayers,
                       int numAttentionHeads, int numKeyValueHeads, int headDim, int vocabSize,
                       int maxPositionEmbeddings, double rmsNormEps, double ropeTheta, boolean tieWordEmbeddings,
                       boolean attentionBias, Optional<String> torchDtype) {
        this(architecture, hiddenSize, intermediateSize, numHiddenLayers, numAttentionHeads, numKeyValueHeads, headDim,
                vocabSize, maxPositionEmbeddings, rmsNormEps, ropeTheta, tieWordEmbeddings, attentionBias, torchDtype,
                RopeConfig.plain(ropeTheta, maxPositionEmbeddings), GateActivation.SILU, false);
    }

    /** Width of all query heads together. */
    public int queryWidth() {
        return numAttentionHeads * headDim;
    }

    /** Width of all key (or value) heads together. */
    public int keyValueWidth() {
        return numKeyValueHeads * headDim;
    }

    /**
     * Reads and validates {@code file}.
     *
     * @throws ModelConfigException naming the file and field at fault
     */
    public static ModelConfig read(Path file) {
        if (!Files.isRegularFile(file)) {
            throw new ModelConfigException(file + ": missing (a model directory needs a Hugging Face " + FILE_NAME + ")");
        }
        try {
            long size = Files.size(file);
            if (size > MAX_CONFIG_BYTES) {
                throw new ModelConfigException(file + ": " + size + " bytes, over the limit of " + MAX_CONFIG_BYTES);
            }
            String text = StandardCharsets.UTF_8.newDecoder()
                    .onMalformedInput(CodingErrorAction.REPORT)
                    .onUnmappableCharacter(CodingErrorAction.REPORT)
                    .decode(ByteBuffer.wrap(Files.readAllBytes(file))).toString();
            return parse(file, text);
        } catch (CharacterCodingException e) {
            throw new ModelConfigException(file + ": not valid UTF-8");
        } catch (IOException e) {
            throw new ModelConfigException(file + ": cannot read: " + e);
        }
    }

    /**
     * Validates config JSON {@code text}; {@code file} names it in errors.
     *
     * @throws ModelConfigException naming the file and field at fault
     */
    public static ModelConfig parse(Path file, String text) {
        StrictJson.Result parsed = StrictJson.parse(text);
        JsonNode root = parsed.node().orElseThrow(() ->
                new ModelConfigException(file + ": not valid JSON: " + parsed.error()));
        return of(file, root);
    }

    /**
     * Validates the config object {@code root} with every check {@link #read} makes; {@code file} names it in errors
     * (config.json, or the file a config was derived from, such as a GGUF file's metadata).
     *
     * @throws ModelConfigException naming the file and field at fault
     */
    public static ModelConfig of(Path file, JsonNode root) {
        if (!root.isObject()) {
            throw new ModelConfigException(file + ": not a JSON object");
        }
        ConfigFields f = new ConfigFields(file, root, "");
        Architecture arch = architecture(f);
        ConfigFieldList.check(f, arch);
        int hidden = f.boundedInt("hidden_size", MAX_WIDTH, "the widest supported residual stream");
        int intermediate = f.boundedInt("intermediate_size", MAX_WIDTH * 8, "the widest supported MLP");
        int layers = f.positiveInt("num_hidden_layers");
        int heads = f.boundedInt("num_attention_heads", MAX_HEADS, "the most supported heads");
        int vocab = f.boundedInt("vocab_size", MAX_VOCAB, "the largest supported vocabulary");
        int maxPositions = f.boundedInt("max_position_embeddings", MAX_POSITIONS, "the longest supported context");
        int kvHeads = f.has("num_key_value_heads") ? f.positiveInt("num_key_value_heads") : heads;
        if (!f.has("head_dim") && !arch.isGemma() && hidden % heads != 0) {
            throw new ModelConfigException(file + ": field 'num_attention_heads' (" + heads
                    + ") does not divide field 'hidden_size' (" + hidden + ")");
        }
        if (heads % kvHeads != 0) {
            throw new ModelConfigException(file + ": field 'num_key_value_heads' (" + kvHeads
                    + ") does not divide field 'num_attention_heads' (" + heads + ")");
        }
        // Gemma2Config and Gemma3TextConfig default head_dim to 256, not hidden / heads
        int headDim = f.has("head_dim") ? f.boundedInt("head_dim", MAX_HEAD_DIM, "the widest supported head")
                : arch.isGemma() ? 256 : hidden / heads;
        if (headDim % 2 != 0) {
            throw new ModelConfigException(file + ": head width " + headDim + (f.has("head_dim") ? " (field 'head_dim')"
                    : " (hidden_size / num_attention_heads)") + " is odd; rotary embeddings need an even head width");
        }
        if ((long) heads * headDim > MAX_WIDTH * 4L) {
            throw f.refuse("head_dim", "is " + headDim + ": " + heads + " heads of it are wider than " + (MAX_WIDTH * 4));
        }
        double eps = f.has("rms_norm_eps") ? f.positiveDouble("rms_norm_eps") : 1e-6;
        RopeConfig rope;
        RopeConfig slidingRope;
        if (arch == Architecture.GEMMA3_TEXT) {
            RopeConfig[] both = RopeReader.gemma3(f, headDim, maxPositions);
            rope = both[0];
            slidingRope = both[1];
        } else {
            rope = RopeReader.read(f, headDim, maxPositions);
            slidingRope = rope;
        }
        if (arch != Architecture.GEMMA3_TEXT && f.root.get("rope_local_base_freq") != null) {
            throw f.refuse("rope_local_base_freq", "is Gemma 3's local RoPE base, which " + arch.hfName() + " does not have");
        }
        // Gemma's configs tie the head to the embedding unless they say otherwise
        boolean tied = f.bool("tie_word_embeddings", arch.isGemma());
        boolean bias = f.bool("attention_bias", false);
        if (bias && arch == Architecture.QWEN2) {
            throw f.refuse("attention_bias", "is true, but Qwen2ForCausalLM's attention has q/k/v biases and no other");
        }
        boolean mlpBias = f.bool("mlp_bias", false);
        // Gemma's MLP reads hidden_activation (default gelu_pytorch_tanh) and ignores hidden_act, as transformers does
        GateActivation act = arch.isGemma() ? activation(f, "hidden_activation", "gelu_pytorch_tanh") : activation(f, "hidden_act", "silu");
        Optional<String> dtype = f.optionalString("torch_dtype").or(() -> f.optionalString("dtype"));
        Optional<GemmaConfig> gemma = arch.isGemma()
                ? Optional.of(GemmaConfig.read(f, arch, hidden, slidingRope, dtype)) : Optional.empty();
        if (arch == Architecture.GEMMA3_TEXT && f.optionalString("model_type").filter(t -> !t.equals("gemma3_text")).isPresent()) {
            throw f.refuse("model_type", "is \"" + f.optionalString("model_type").get() + "\"; Gemma3ForCausalLM runs the text decoder "
                    + "config, model_type \"gemma3_text\" (a \"gemma3\" config nests it under text_config)");
        }
        Optional<MoeConfig> moe = arch.isMoe() ? Optional.of(MoeConfig.read(f, arch, layers, intermediate)) : Optional.empty();
        return new ModelConfig(arch, hidden, intermediate, layers, heads, kvHeads, headDim, vocab, maxPositions,
                eps, rope.theta(), tied, bias, dtype, rope, act, mlpBias, gemma, moe);
    }

    /** The largest hidden size read (the widest models have 16384-32768). */
    public static final int MAX_WIDTH = 1 << 16;
    /** The most attention heads read. */
    public static final int MAX_HEADS = 1024;
    /** The widest head read. */
    public static final int MAX_HEAD_DIM = 1024;
    /** The largest vocabulary read. */
    public static final int MAX_VOCAB = 1 << 22;
    /** The longest context read (the longest models claim about 10^7 positions). */
    public static final int MAX_POSITIONS = 1 << 26;

    private static GateActivation activation(ConfigFields f, String field, String absent) {
        String name = f.optionalString(field).orElse(absent);
        return switch (name) {
            case "silu", "swish" -> GateActivation.SILU;
            case "gelu" -> GateActivation.GELU;
            case "gelu_new", "gelu_pytorch_tanh" -> GateActivation.GELU_TANH;
            default -> throw f.refuse(field, "is \"" + name + "\", which graphlane does not apply; supported: "
                    + "silu, gelu, gelu_new, gelu_pytorch_tanh");
        };
    }

    private static Architecture architecture(ConfigFields f) {
        JsonNode archs = f.root.get("architectures");
        if (archs == null || archs.isNull()) {
            String type = f.optionalString("model_type").orElseThrow(() -> new ModelConfigException(f.file
                    + ": no field 'architectures' and no 'model_type'; supported architectures: "
                    + Architecture.supportedNames()));
            return Architecture.fromModelType(type).orElseThrow(() -> new ModelConfigException(f.file
                    + ": field 'model_type' \"" + type + "\" is not supported; supported architectures: "
                    + Architecture.supportedNames()));
        }
        if (!archs.isArray() || archs.isEmpty()) {
            throw new ModelConfigException(f.file + ": field 'architectures' must be a non-empty array of names (found "
                    + archs + "); supported: " + Architecture.supportedNames());
        }
        for (JsonNode name : archs) {
            if (name.isTextual()) {
                Optional<Architecture> a = Architecture.fromHfName(name.textValue());
                if (a.isPresent()) {
                    return a.get();
                }
                Optional<String> why = Architecture.refusalReason(name.textValue());
                if (why.isPresent()) {
                    throw new ModelConfigException(f.file + ": field 'architectures' names " + name.textValue()
                            + ", which graphlane does not run: " + why.get() + "; supported: " + Architecture.supportedNames());
                }
            }
        }
        throw new ModelConfigException(f.file + ": field 'architectures' " + archs
                + " names no supported architecture; supported: " + Architecture.supportedNames());
    }
}
