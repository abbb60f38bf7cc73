package io.graphlane.inference.demo;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.graphlane.checkpoint.recipe.HalfPrecision;
import io.graphlane.checkpoint.safetensors.SafetensorsWriter;
import io.graphlane.core.GraphlaneException;
import io.graphlane.core.tensor.DType;
import io.graphlane.core.tensor.TensorSpec;
import io.graphlane.inference.llama.LlamaConfig;
import io.graphlane.inference.llama.LlamaTensors.Expected;
import io.graphlane.inference.tokenizer.ByteLevelTokenizerJson;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The built-in demo model: a Llama-architecture checkpoint with weights drawn from a fixed seed
 * and a byte-level tokenizer (token id = byte). Its output is not meaningful text: it exists so
 * that the engine has real work without a download.
 *
 * <p>Written on first use as a Hugging Face directory ({@code config.json},
 * {@code model.safetensors}, {@code tokenizer.json}) into a cache directory: the system property
 * {@value #DIR_PROPERTY}, else the environment variable {@value #DIR_ENV}, else
 * {@code ~/.cache/graphlane/demo-model-v1}. With {@code -D}{@value #DTYPE_PROPERTY}{@code =bf16} (or
 * {@value #DTYPE_ENV}) the weights are written in bfloat16 (the same seeded values, rounded), by default
 * into {@code ~/.cache/graphlane/demo-model-v1-bf16}. The files are written into a temporary sibling
 * directory that is then renamed into place, so a concurrent or interrupted writer never leaves a
 * half-written model where a reader looks.
 */
public final class DemoModel {
    /** System property naming the demo model's directory. */
    public static final String DIR_PROPERTY = "graphlane.demo.dir";
    /** Environment variable naming the demo model's directory (the system property wins). */
    public static final String DIR_ENV = "GRAPHLANE_DEMO_DIR";
    /** System property choosing the demo weights' dtype: {@code f32} (default) or {@code bf16}. */
    public static final String DTYPE_PROPERTY = "graphlane.demo.dtype";
    /** Environment variable choosing the demo weights' dtype (the system property wins). */
    public static final String DTYPE_ENV = "GRAPHLANE_DEMO_DTYPE";
    /** The seed every demo weight is drawn from; changing it (or the configuration) needs a new directory version. */
    public static final long SEED = 20_240_601L;
    /** The demo's architecture: 8 layers of width 768, 12 query heads over 4 key/value heads, byte vocabulary. */
    public static final LlamaConfig CONFIG = new LlamaConfig(768, 2048, 8, 12, 4, 64, 256, 1e-5f, 10000f, false, false, false, 2048);

    private static final Logger LOG = LoggerFactory.getLogger(DemoModel.class);
    private static final String VERSION = "demo-model-v1";
    private static final List<String> FILES = List.of("config.json", "model.safetensors", "tokenizer.json");

    private DemoModel() {
    }

    /** The directory the demo model lives in, from the property, the environment or the default. */
    public static Path directory() {
        String configured = System.getProperty(DIR_PROPERTY);
        if (configured == null || configured.isBlank()) {
            configured = System.getenv(DIR_ENV);
        }
        if (configured != null && !configured.isBlank()) {
            return Path.of(configured).toAbsolutePath();
        }
        return Path.of(System.getProperty("user.home"), ".cache", "graphlane", dtype() == DType.BF16 ? VERSION + "-bf16" : VERSION);
    }

    /**
     * The dtype the demo weights are written in: {@link DType#F32} unless {@value #DTYPE_PROPERTY} (or {@value #DTYPE_ENV})
     * says {@code bf16}.
     *
     * @throws GraphlaneException naming the property and the value when it is neither f32 nor bf16
     */
    public static DType dtype() {
        String configured = System.getProperty(DTYPE_PROPERTY);
        if (configured == null || configured.isBlank()) {
            configured = System.getenv(DTYPE_ENV);
        }
        if (configured == null || configured.isBlank() || configured.trim().equalsIgnoreCase("f32")) {
            return DType.F32;
        }
        if (configured.trim().equalsIgnoreCase("bf16")) {
            return DType.BF16;
        }
        throw new GraphlaneException("-D" + DTYPE_PROPERTY + " (or " + DTYPE_ENV + ") must be f32 or bf16, found '" + configured + "'");
    }

    /** The demo model's directory, written first if it is not there yet. */
    public static Path ensure() {
        return ensure(directory());
    }

    /**
     * {@code dir} holding the demo model, written first if it is not there yet.
     *
     * @throws GraphlaneException naming the directory if it exists without the model's files or cannot be written
     */
    public static Path ensure(Path dir) {
        return ensure(dir, CONFIG, SEED, dtype());
    }

    /** {@code dir} holding a seeded F32 model of {@code config}, written first if it is not there yet. */
    static Path ensure(Path dir, LlamaConfig config, long seed) {
        return ensure(dir, config, seed, DType.F32);
    }

    /** {@code dir} holding a seeded model of {@code config} in {@code dtype} (F32 or BF16), written first if it is not there yet. */
    static Path ensure(Path dir, LlamaConfig config, long seed, DType dtype) {
        if (isComplete(dir)) {
            return dir;
        }
        if (Files.exists(dir) && !isEmptyDirectory(dir)) {
            throw new GraphlaneException("demo model: " + dir + " exists but does not hold " + FILES
                    + "; remove it, or point -D" + DIR_PROPERTY + " / " + DIR_ENV + " elsewhere");
        }
        Path parent = dir.toAbsolutePath().getParent();
        Path staging = null;
        try {
            Files.createDirectories(parent);
            staging = Files.createTempDirectory(parent, dir.getFileName() + ".partial-");
            long started = System.nanoTime();
            LOG.info("writing the demo model into {} (first use)", dir);
            write(staging, config, seed, dtype);
            publish(staging, dir);
            LOG.info("demo model written in {} ms", (System.nanoTime() - started) / 1_000_000);
        } catch (IOException e) {
            throw new GraphlaneException("demo model: cannot write " + dir + ": " + e, e);
        } finally {
            if (staging != null) {
                deleteQuietly(staging);
            }
        }
        if (!isComplete(dir)) {
            throw new GraphlaneException("demo model: " + dir + " is incomplete after writing; remove it and retry");
        }
        return dir;
    }

    /** Writes the three files of the model into {@code dir}. */
    static void write(Path dir, LlamaConfig config, long seed, DType dtype) throws IOException {
        SafetensorsWriter writer = new SafetensorsWriter().metadata("format", "pt").metadata("graphlane", VERSION);
        List<Expected> tensors = SeededWeights.tensors(config);
        for (int i = 0; i < tensors.size(); i++) {
            Expected expected = tensors.get(i);
            int index = i;
            writer.add(expected.name(), TensorSpec.of(dtype, expected.checkpointShape()), out -> {
                float[] values = SeededWeights.draw(expected, seed, index);
                ByteBuffer bytes = ByteBuffer.allocate(values.length * dtype.byteSize()).order(ByteOrder.LITTLE_ENDIAN);
                if (dtype == DType.BF16) {
                    for (float v : values) {
                        bytes.putShort(HalfPrecision.f32ToBf16(v));
                    }
                    bytes.flip();
                } else {
                    bytes.asFloatBuffer().put(values);
                }
                while (bytes.hasRemaining()) {
                    out.write(bytes);
                }
            });
        }
        writer.write(dir.resolve("model.safetensors"));
        Files.writeString(dir.resolve("config.json"), configJson(config, dtype == DType.BF16 ? "bfloat16" : "float32"),
                StandardCharsets.UTF_8);
        Files.writeString(dir.resolve("tokenizer.json"), ByteLevelTokenizerJson.render(), StandardCharsets.UTF_8);
    }

    /** The Hugging Face {@code config.json} of a Llama configuration with F32 weights. */
    public static String configJson(LlamaConfig c) {
        return configJson(c, "float32");
    }

    /** The Hugging Face {@code config.json} of a Llama configuration whose weights are {@code torchDtype}. */
    public static String configJson(LlamaConfig c, String torchDtype) {
        ObjectMapper mapper = new ObjectMapper();
        ObjectNode root = mapper.createObjectNode();
        root.putArray("architectures").add("LlamaForCausalLM");
        root.put("model_type", "llama");
        root.put("hidden_size", c.hiddenSize());
        root.put("intermediate_size", c.intermediateSize());
        root.put("num_hidden_layers", c.layerCount());
        root.put("num_attention_heads", c.headCount());
        root.put("num_key_value_heads", c.kvHeadCount());
        root.put("head_dim", c.headDim());
        root.put("vocab_size", c.vocabSize());
        root.put("rms_norm_eps", c.rmsNormEps());
        root.put("rope_theta", c.ropeTheta());
        root.put("tie_word_embeddings", c.tieWordEmbeddings());
        root.put("attention_bias", c.qkvBias() && c.outputBias());
        root.put("max_position_embeddings", c.maxPositions());
        root.put("hidden_act", "silu");
        root.put("torch_dtype", torchDtype);
        root.putNull("bos_token_id");
        root.putNull("eos_token_id");
        return root.toPrettyString();
    }

    static void publish(Path staging, Path dir) throws IOException {
        try {
            // rename(2) replaces a missing or empty directory atomically and refuses a non-empty one
            Files.move(staging, dir, StandardCopyOption.ATOMIC_MOVE);
        } catch (AtomicMoveNotSupportedException e) {
            throw new IOException("the file system of " + dir + " cannot rename directories atomically", e);
        } catch (IOException e) {
            if (!isComplete(dir)) {
                throw e;
            }
            LOG.info("another writer published the demo model in {} first", dir);
        }
    }

    private static boolean isComplete(Path dir) {
        return FILES.stream().allMatch(f -> Files.isRegularFile(dir.resolve(f)));
    }

    static boolean isEmptyDirectory(Path dir) {
        try (Stream<Path> entries = Files.list(dir)) {
            return entries.findAny().isEmpty();
        } catch (IOException e) {
            return false;
        }
    }

    static void deleteQuietly(Path dir) {
        if (!Files.exists(dir)) {
            return;
        }
        try (Stream<Path> walk = Files.walk(dir)) {
            for (Path p : walk.sorted(Comparator.reverseOrder()).toList()) {
                Files.deleteIfExists(p);
            }
        } catch (IOException | UncheckedIOException e) {
            LOG.warn("could not remove the staging directory {}: {}", dir, e.toString());
        }
    }

    /** The demo weights as arrays, by name (for tests and benchmarks that skip the files). */
    public static Map<String, float[]> weights() {
        return SeededWeights.generate(CONFIG, SEED);
    }
}
