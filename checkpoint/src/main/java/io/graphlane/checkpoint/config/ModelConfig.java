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
 */
public record ModelConfig(Architecture architecture, int hiddenSize, int intermediateSize, int numHiddenLayers,
                          int numAttentionHeads, int numKeyValueHeads, int headDim, int vocabSize,
                          int maxPositionEmbeddings, double rmsNormEps, double ropeTheta, boolean tieWordEmbeddings,
                          boolean attentionBias, Optional<String> torchDtype) {
    /** The file name Hugging Face gives the model configuration. */
    public static final String FILE_NAME = "config.json";

    /** The largest config.json read, in bytes. */
    public static final long MAX_CONFIG_BYTES = 10_000_000L;

    /** Checks the invariants {@link #parse} established. */
    public ModelConfig {
        Objects.requireNonNull(architecture, "architecture");
        Objects.requireNonNull(torchDtype, "torchDtype");
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
        if (!root.isObject()) {
            throw new ModelConfigException(file + ": not a JSON object");
        }
        Fields f = new Fields(file, root);
        Architecture arch = architecture(f);
        int hidden = f.positiveInt("hidden_size");
        int intermediate = f.positiveInt("intermediate_size");
        int layers = f.positiveInt("num_hidden_layers");
        int heads = f.positiveInt("num_attention_heads");
        int vocab = f.positiveInt("vocab_size");
        int maxPositions = f.positiveInt("max_position_embeddings");
        int kvHeads = f.has("num_key_value_heads") ? f.positiveInt("num_key_value_heads") : heads;
        if (hidden % heads != 0) {
            throw new ModelConfigException(file + ": field 'num_attention_heads' (" + heads
                    + ") does not divide field 'hidden_size' (" + hidden + ")");
        }
        if (heads % kvHeads != 0) {
            throw new ModelConfigException(file + ": field 'num_key_value_heads' (" + kvHeads
                    + ") does not divide field 'num_attention_heads' (" + heads + ")");
        }
        int headDim = f.has("head_dim") ? f.positiveInt("head_dim") : hidden / heads;
        double eps = f.has("rms_norm_eps") ? f.positiveDouble("rms_norm_eps") : 1e-6;
        double theta = f.has("rope_theta") ? f.positiveDouble("rope_theta") : 10_000.0;
        boolean tied = f.bool("tie_word_embeddings", false);
        boolean bias = f.bool("attention_bias", false);
        Optional<String> dtype = f.optionalString("torch_dtype");
        return new ModelConfig(arch, hidden, intermediate, layers, heads, kvHeads, headDim, vocab, maxPositions,
                eps, theta, tied, bias, dtype);
    }

    private static Architecture architecture(Fields f) {
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
            }
        }
        throw new ModelConfigException(f.file + ": field 'architectures' " + archs
                + " names no supported architecture; supported: " + Architecture.supportedNames());
    }

    /** Typed field access that names the file and the field in every refusal. */
    private static final class Fields {
        private final Path file;
        private final JsonNode root;

        Fields(Path file, JsonNode root) {
            this.file = file;
            this.root = root;
        }

        boolean has(String name) {
            JsonNode v = root.get(name);
            return v != null && !v.isNull();
        }

        int positiveInt(String name) {
            JsonNode v = root.get(name);
            if (v == null || v.isNull()) {
                throw new ModelConfigException(file + ": field '" + name + "' is missing, expected a positive integer");
            }
            if (!v.isIntegralNumber() || !v.canConvertToInt()) {
                throw new ModelConfigException(file + ": field '" + name + "' is " + v
                        + ", expected a positive integer");
            }
            int i = v.intValue();
            if (i <= 0) {
                throw new ModelConfigException(file + ": field '" + name + "' is " + i + ", expected a positive integer");
            }
            return i;
        }

        double positiveDouble(String name) {
            JsonNode v = root.get(name);
            if (!v.isNumber() || !(v.doubleValue() > 0) || Double.isInfinite(v.doubleValue())) {
                throw new ModelConfigException(file + ": field '" + name + "' is " + v + ", expected a positive number");
            }
            return v.doubleValue();
        }

        boolean bool(String name, boolean absent) {
            JsonNode v = root.get(name);
            if (v == null || v.isNull()) {
                return absent;
            }
            if (!v.isBoolean()) {
                throw new ModelConfigException(file + ": field '" + name + "' is " + v + ", expected true or false");
            }
            return v.booleanValue();
        }

        Optional<String> optionalString(String name) {
            JsonNode v = root.get(name);
            if (v == null || v.isNull()) {
                return Optional.empty();
            }
            if (!v.isTextual()) {
                throw new ModelConfigException(file + ": field '" + name + "' is " + v + ", expected a string");
            }
            return Optional.of(v.textValue());
        }
    }
}
