package io.graphlane.inference.model;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.graphlane.checkpoint.CheckpointSource;
import io.graphlane.checkpoint.ModelCheckpoint;
import io.graphlane.checkpoint.config.Architecture;
import io.graphlane.checkpoint.config.ModelConfig;
import io.graphlane.checkpoint.json.StrictJson;
import io.graphlane.checkpoint.config.RopeConfig;
import io.graphlane.checkpoint.config.ModelTensors;
import io.graphlane.checkpoint.gguf.GgufCheckpoint;
import io.graphlane.core.GraphlaneException;
import io.graphlane.inference.llama.LlamaConfig;
import io.graphlane.inference.tokenizer.TextTokenizer;
import io.graphlane.inference.tokenizer.TokenizerConfig;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashSet;
import java.util.Map;
import java.util.Set;

/**
 * A Hugging Face Llama-family model directory, or a GGUF file (or a directory holding exactly one and no safetensors
 * weights), validated as a load validates it (config.json or the GGUF metadata read as one, every weight header, the
 * architecture's tensors and shapes), with the model's configuration and its end-of-sequence ids. Reads no weight byte until a loader asks. Layers with a sliding attention window
 * (Mistral's {@code sliding_window}, Qwen2's sliding layers: {@link AttentionWindows}) attend within it; the sequence
 * may still grow to {@code max_position_embeddings}.
 *
 * @param dir          the directory (or the GGUF file) as given
 * @param checkpoint   the validated checkpoint
 * @param config       the model configuration
 * @param eosTokenIds  the ids that end a generation: {@code eos_token_id} (one or a list) of generation_config.json,
 *                     else of config.json (a GGUF file's {@code tokenizer.ggml.eos_token_id} and {@code eot_token_id});
 *                     empty if neither has one
 * @param settingsDir  the directory holding tokenizer.json, tokenizer_config.json and generation_config.json: {@code dir}
 *                     itself, or for a GGUF file a private directory where the first two are written from its metadata
 */
public record ModelDirectory(Path dir, ModelCheckpoint checkpoint, LlamaConfig config, Set<Integer> eosTokenIds, Path settingsDir) {
    /** The optional file whose {@code eos_token_id} takes precedence over config.json's. */
    public static final String GENERATION_CONFIG = "generation_config.json";

    /** Copies the id set. */
    public ModelDirectory {
        eosTokenIds = Set.copyOf(eosTokenIds);
        java.util.Objects.requireNonNull(settingsDir, "settingsDir");
    }

    /**
     * Opens and validates {@code dir}.
     *
     * @throws GraphlaneException naming the file and field (or tensor) at fault, or a configuration this
     *                            implementation does not run; config.json and the tensors are checked by
     *                            {@link ModelCheckpoint#open}, the same checks {@code graphlane inspect} runs
     */
    public static ModelDirectory open(Path dir) {
        if (!Files.exists(dir)) {
            throw new GraphlaneException("model: " + dir + " does not exist; point --model at a Hugging Face model directory or a "
                    + GgufCheckpoint.EXTENSION + " file");
        }
        ModelCheckpoint checkpoint = ModelCheckpoint.open(dir);
        if (checkpoint.gguf() != null) {
            return openGguf(dir, checkpoint);
        }
        JsonNode raw = rawConfig(dir.resolve(ModelConfig.FILE_NAME));
        LlamaConfig config = toLlama(checkpoint.config()).withAttentionWindows(AttentionWindows.of(dir.resolve(ModelConfig.FILE_NAME),
                checkpoint.config().architecture(), checkpoint.config().numHiddenLayers(), raw));
        return new ModelDirectory(dir, checkpoint, config, eosIds(dir, raw), dir);
    }

    /**
     * A GGUF model: the configuration from the metadata (already validated by the config reader), the tokenizer and its
     * settings written from the metadata as tokenizer.json and tokenizer_config.json into a private directory (removed
     * when the JVM exits), the end-of-sequence ids from the metadata.
     */
    private static ModelDirectory openGguf(Path given, ModelCheckpoint checkpoint) {
        Path file = checkpoint.dir();
        Path configName = ModelCheckpoint.configName(file);
        JsonNode raw = checkpoint.rawConfig();
        LlamaConfig config = toLlama(checkpoint.config()).withAttentionWindows(AttentionWindows.of(configName,
                checkpoint.config().architecture(), checkpoint.config().numHiddenLayers(), raw));
        JsonNode eos = raw.get("eos_token_id");
        Set<Integer> eosIds = eos == null || eos.isNull() ? new LinkedHashSet<>() : idsOf(configName, eos);
        Path settings;
        try {
            settings = Files.createTempDirectory("graphlane-gguf-");
            settings.toFile().deleteOnExit();
            ObjectMapper json = new ObjectMapper();
            for (Map.Entry<String, JsonNode> f : Map.<String, JsonNode>of("tokenizer.json", checkpoint.gguf().tokenizerJson(),
                    TokenizerConfig.FILE_NAME, checkpoint.gguf().tokenizerConfig()).entrySet()) {
                Path out = settings.resolve(f.getKey());
                json.writeValue(out.toFile(), f.getValue());
                out.toFile().deleteOnExit();
            }
        } catch (IOException e) {
            throw new GraphlaneException(file + ": cannot write the tokenizer its metadata describes: " + e.getMessage(), e);
        }
        return new ModelDirectory(given, checkpoint, config, eosIds, settings);
    }

    /** The configuration the model code runs, from the checkpoint module's validated config.json. */
    public static LlamaConfig toLlama(ModelConfig c) {
        return new LlamaConfig(c.hiddenSize(), c.intermediateSize(), c.numHiddenLayers(), c.numAttentionHeads(), c.numKeyValueHeads(),
                c.headDim(), c.vocabSize(), (float) c.rmsNormEps(), (float) c.ropeTheta(), c.tieWordEmbeddings(),
                ModelTensors.qkvBias(c), ModelTensors.outputBias(c), c.rope().contextLength(), c.rope(), c.hiddenAct(), c.mlpBias(),
                c.architecture().hasQkNorm(), c.architecture().fusesProjections(),
                c.architecture() == Architecture.PHI3 && c.rope().type() != RopeConfig.Type.DEFAULT).withGemma(c.gemma().orElse(null))
                .withMoe(c.moe().orElse(null));
    }

    /**
     * This directory with sequences of up to {@code positions} positions allowed (KV caches, prompts), in place of the
     * configuration's ({@code max_position_embeddings}, or the context the rope scaling extends it to). transformers
     * runs a model past it; a caller that wants the same says so here.
     *
     * @throws GraphlaneException if {@code positions} is not positive
     */
    public ModelDirectory withMaxPositions(int positions) {
        if (positions < 1) {
            throw new GraphlaneException("--max-positions must be >= 1, got " + positions);
        }
        return new ModelDirectory(dir, checkpoint, config.withMaxPositions(positions), eosTokenIds, settingsDir);
    }

    /** A lease source on the weights, with at most {@code maxOpenShards} shard files mapped at once; close it after loading. */
    public CheckpointSource openSource(int maxOpenShards) {
        return checkpoint.openSource(maxOpenShards);
    }

    /**
     * The directory's tokenizer.json, loaded with its tokenizer_config.json applied ({@link TextTokenizer#forModel}):
     * encoding adds the special tokens (such as BOS) transformers would add to a prompt.
     */
    public TextTokenizer tokenizer() {
        return TextTokenizer.forModel(settingsDir);
    }

    /** The model's name for users: the directory's name, or the GGUF file's without its extension. */
    public String name() {
        if (checkpoint.gguf() != null) {
            String file = checkpoint.dir().getFileName().toString();
            return file.substring(0, file.length() - GgufCheckpoint.EXTENSION.length());
        }
        return dir.toAbsolutePath().normalize().getFileName().toString();
    }

    /** What holds the configuration, for messages: config.json, or the GGUF file's metadata read as one. */
    public Path configFile() {
        return checkpoint.gguf() != null ? ModelCheckpoint.configName(checkpoint.dir()) : dir.resolve(ModelConfig.FILE_NAME);
    }

    /** True when the model is a GGUF file. */
    public boolean isGguf() {
        return checkpoint.gguf() != null;
    }

    private static JsonNode rawConfig(Path file) {
        return StrictJson.readObject(file, ModelConfig.MAX_CONFIG_BYTES);
    }

    /** The end-of-sequence ids as Hugging Face's generation uses them: generation_config.json's, else config.json's. */
    private static Set<Integer> eosIds(Path dir, JsonNode config) {
        Path generationConfig = dir.resolve(GENERATION_CONFIG);
        if (Files.isRegularFile(generationConfig)) {
            JsonNode node = rawConfig(generationConfig).get("eos_token_id");
            if (node != null && !node.isNull()) {
                return idsOf(generationConfig, node);
            }
        }
        JsonNode node = config.get("eos_token_id");
        return node == null || node.isNull() ? new LinkedHashSet<>() : idsOf(dir.resolve(ModelConfig.FILE_NAME), node);
    }

    private static Set<Integer> idsOf(Path file, JsonNode node) {
        Set<Integer> ids = new LinkedHashSet<>();
        if (node.isInt() && node.intValue() >= 0) {
            ids.add(node.intValue());
            return ids;
        }
        if (node.isArray()) {
            for (JsonNode id : node) {
                if (!id.isInt() || id.intValue() < 0) {
                    throw new GraphlaneException(file + ": field 'eos_token_id' holds " + id + ", expected non-negative integer ids");
                }
                ids.add(id.intValue());
            }
            return ids;
        }
        throw new GraphlaneException(file + ": field 'eos_token_id' is " + node + ", expected an id or a list of ids");
    }
}
