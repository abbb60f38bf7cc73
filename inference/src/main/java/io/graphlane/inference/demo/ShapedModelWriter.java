package io.graphlane.inference.demo;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.graphlane.checkpoint.ShardIndex;
import io.graphlane.checkpoint.config.ModelConfig;
import io.graphlane.checkpoint.recipe.HalfPrecision;
import io.graphlane.checkpoint.safetensors.SafetensorsWriter;
import io.graphlane.core.GraphlaneException;
import io.graphlane.core.tensor.DType;
import io.graphlane.core.tensor.TensorSpec;
import io.graphlane.inference.llama.LlamaConfig;
import io.graphlane.inference.llama.LlamaTensors.Expected;
import io.graphlane.inference.model.ModelDirectory;
import io.graphlane.inference.tokenizer.ByteLevelTokenizerJson;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.WritableByteChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.stream.IntStream;

/**
 * Writes a Hugging Face model directory of a {@link DemoShape} with seeded random weights: {@code config.json} (the
 * published model's fields), the weights as safetensors (one file, or shards of at most {@value #SHARD_BYTES} bytes with
 * a {@code model.safetensors.index.json} past that), a byte-level {@code tokenizer.json} sized to the vocabulary
 * ({@link ByteLevelTokenizerJson#render(int)}), and {@value #MARKER} recording the shape, dtype and seed.
 *
 * <p>The real shapes' weights are drawn uniformly with the variance {@link SeededWeights} uses (matrices of standard
 * deviation {@code 1/sqrt(fan-in)}, norm weights near 1, biases near 0), in chunks of {@value #CHUNK} values, each chunk
 * from its own generator seeded by the model seed, the tensor's place and the chunk's, so the bytes depend only on the
 * seed and the chunks are drawn in parallel. One batch of chunks per core is in memory at a time, never a whole tensor.
 * The {@code demo} shape is the built-in demo model's bytes ({@link DemoModel}). The files are written into a temporary
 * sibling directory that is renamed into place, so a reader never sees half a model.
 */
public final class ShapedModelWriter {
    /** The file recording what wrote the directory. */
    public static final String MARKER = "demo-model.json";
    /** The largest shard written (bytes); a model past it is written as shards with an index. */
    static final long SHARD_BYTES = 4L << 30;
    private static final int CHUNK = 1 << 20;

    private ShapedModelWriter() {
    }

    /** What {@link #write} did: whether it wrote the files or found them there already, and the weights' bytes. */
    public record Written(Path dir, boolean reused, long weightBytes, long millis) {
    }

    /**
     * {@code out} holding the model of {@code shape} in {@code dtype} (F32 or BF16) drawn from {@code seed}: written unless
     * {@code out} already holds exactly that (its {@value #MARKER} says so).
     *
     * @throws GraphlaneException naming the directory if it exists with other content, or the dtype if it is neither F32
     *                            nor BF16
     */
    public static Written write(Path out, DemoShape shape, DType dtype, long seed) {
        return write(out, shape.config(torchDtype(dtype)), shape == DemoShape.DEMO, shape.cliName(), dtype, seed);
    }

    /** {@link #write} for any Llama-family {@code config} (tests write small shapes with a real one's features). */
    static Written write(Path out, ObjectNode config, boolean builtInDemo, String shapeName, DType dtype, long seed) {
        return write(out, config, builtInDemo, shapeName, dtype, seed, SHARD_BYTES);
    }

    /** {@link #write} with shards of at most {@code shardBytes} bytes. */
    static Written write(Path out, ObjectNode config, boolean builtInDemo, String shapeName, DType dtype, long seed, long shardBytes) {
        String torchDtype = torchDtype(dtype);
        config.put("torch_dtype", torchDtype);
        ObjectNode marker = new ObjectMapper().createObjectNode();
        marker.put("shape", shapeName);
        marker.put("dtype", dtype.name());
        marker.put("seed", seed);
        marker.set("config", config);
        Path dir = out.toAbsolutePath();
        if (Files.isDirectory(dir) && !DemoModel.isEmptyDirectory(dir)) {
            // compared as read back, so a number written as a long and read as an int still matches
            if (readMarkerText(marker.toPrettyString()).equals(readMarker(dir))) {
                return new Written(dir, true, weightBytes(dir), 0);
            }
            throw new GraphlaneException("--out: " + dir + " exists and does not hold the " + shapeName + " " + dtype.name()
                    + " model of seed " + seed + " (" + MARKER + " differs or is missing); remove it or choose another directory");
        }
        if (Files.exists(dir) && !Files.isDirectory(dir)) {
            throw new GraphlaneException("--out: " + dir + " is a file, expected a directory to write the model into");
        }
        long started = System.nanoTime();
        Path staging = null;
        try {
            Files.createDirectories(dir.getParent());
            staging = Files.createTempDirectory(dir.getParent(), dir.getFileName() + ".partial-");
            Files.writeString(staging.resolve(ModelConfig.FILE_NAME), config.toPrettyString(), StandardCharsets.UTF_8);
            LlamaConfig llama = ModelDirectory.toLlama(ModelConfig.read(staging.resolve(ModelConfig.FILE_NAME)));
            if (builtInDemo) {
                DemoModel.write(staging, llama, seed, dtype);
                // DemoModel.write renders its own config.json; the shape's is the same model with the published fields
                Files.writeString(staging.resolve(ModelConfig.FILE_NAME), config.toPrettyString(), StandardCharsets.UTF_8);
            } else {
                writeWeights(staging, llama, dtype, seed, shardBytes);
                Files.writeString(staging.resolve("tokenizer.json"), ByteLevelTokenizerJson.render(llama.vocabSize()),
                        StandardCharsets.UTF_8);
            }
            Files.writeString(staging.resolve(MARKER), marker.toPrettyString(), StandardCharsets.UTF_8);
            try {
                Files.move(staging, dir, StandardCopyOption.ATOMIC_MOVE);
            } catch (AtomicMoveNotSupportedException e) {
                throw new GraphlaneException("--out: the file system of " + dir + " cannot rename directories atomically");
            }
            staging = null;
        } catch (IOException e) {
            throw new GraphlaneException("--out: cannot write " + dir + ": " + e.getMessage(), e);
        } finally {
            if (staging != null) {
                DemoModel.deleteQuietly(staging);
            }
        }
        return new Written(dir, false, weightBytes(dir), (System.nanoTime() - started) / 1_000_000);
    }

    private static String torchDtype(DType dtype) {
        return switch (dtype) {
            case BF16 -> "bfloat16";
            case F32 -> "float32";
            default -> throw new GraphlaneException("--dtype: expected bf16 or f32, found " + dtype.name().toLowerCase());
        };
    }

    private static JsonNode readMarkerText(String text) {
        try {
            return new ObjectMapper().readTree(text);
        } catch (IOException e) {
            throw new IllegalStateException("the marker does not parse", e);
        }
    }

    private static JsonNode readMarker(Path dir) {
        try {
            return new ObjectMapper().readTree(dir.resolve(MARKER).toFile());
        } catch (IOException e) {
            return null;
        }
    }

    private static long weightBytes(Path dir) {
        try (var files = Files.list(dir)) {
            return files.filter(f -> f.getFileName().toString().endsWith(".safetensors")).mapToLong(f -> f.toFile().length()).sum();
        } catch (IOException e) {
            return -1;
        }
    }

    /** The safetensors file(s) of every tensor {@code config} needs, sharded past {@code shardBytes}. */
    static void writeWeights(Path dir, LlamaConfig config, DType dtype, long seed, long shardBytes) {
        List<Expected> tensors = SeededWeights.tensors(config);
        List<List<Integer>> shards = new ArrayList<>();
        long inShard = 0;
        long total = 0;
        for (int i = 0; i < tensors.size(); i++) {
            long bytes = (long) tensors.get(i).rows() * tensors.get(i).cols() * dtype.byteSize();
            total += bytes;
            if (shards.isEmpty() || (inShard > 0 && inShard + bytes > shardBytes)) {
                shards.add(new ArrayList<>());
                inShard = 0;
            }
            shards.get(shards.size() - 1).add(i);
            inShard += bytes;
        }
        ObjectNode index = new ObjectMapper().createObjectNode();
        index.putObject("metadata").put("total_size", total);
        ObjectNode weightMap = index.putObject("weight_map");
        for (int s = 0; s < shards.size(); s++) {
            String file = shards.size() == 1 ? "model.safetensors"
                    : String.format("model-%05d-of-%05d.safetensors", s + 1, shards.size());
            SafetensorsWriter writer = new SafetensorsWriter().metadata("format", "pt");
            for (int i : shards.get(s)) {
                Expected expected = tensors.get(i);
                weightMap.put(expected.name(), file);
                writer.add(expected.name(), TensorSpec.of(dtype, expected.checkpointShape()), out -> stream(out, expected, i, dtype, seed));
            }
            writer.write(dir.resolve(file));
        }
        if (shards.size() > 1) {
            try {
                Files.writeString(dir.resolve(ShardIndex.FILE_NAME), index.toPrettyString(), StandardCharsets.UTF_8);
            } catch (IOException e) {
                throw new GraphlaneException("cannot write " + dir.resolve(ShardIndex.FILE_NAME) + ": " + e.getMessage(), e);
            }
        }
    }

    /** Writes tensor {@code index}'s values, drawn a batch of chunks at a time in parallel, in order. */
    private static void stream(WritableByteChannel out, Expected expected, int index, DType dtype, long seed) throws IOException {
        long count = (long) expected.rows() * expected.cols();
        int chunks = (int) ((count + CHUNK - 1) / CHUNK);
        int batch = Math.max(1, Runtime.getRuntime().availableProcessors() * 2);
        boolean norm = expected.name().endsWith("norm.weight");
        boolean bias = expected.name().endsWith(".bias");
        double std = norm ? 0.1 : bias ? 0.02 : 1 / Math.sqrt(expected.cols());
        float half = (float) (Math.sqrt(3) * std);
        float center = norm ? 1f : 0f;
        for (int first = 0; first < chunks; first += batch) {
            ByteBuffer[] drawn = IntStream.range(first, Math.min(chunks, first + batch)).parallel()
                    .mapToObj(c -> chunk(c, (int) Math.min(CHUNK, count - (long) c * CHUNK), index, dtype, seed, center, half))
                    .toArray(ByteBuffer[]::new);
            for (ByteBuffer b : drawn) {
                while (b.hasRemaining()) {
                    out.write(b);
                }
            }
        }
    }

    /** Chunk {@code c} of tensor {@code index}: {@code n} values uniform in {@code center ± half}, little-endian. */
    private static ByteBuffer chunk(int c, int n, int index, DType dtype, long seed, float center, float half) {
        SplittableRandom random = new SplittableRandom(seed * 0x9E3779B97F4A7C15L + ((long) index << 32) + c);
        ByteBuffer bytes = ByteBuffer.allocate(n * dtype.byteSize()).order(ByteOrder.LITTLE_ENDIAN);
        float scale = half * 0x1.0p-31f;
        if (dtype == DType.BF16) {
            for (int i = 0; i < n; i++) {
                bytes.putShort(HalfPrecision.f32ToBf16(center + random.nextInt() * scale));
            }
        } else {
            for (int i = 0; i < n; i++) {
                bytes.putFloat(center + random.nextInt() * scale);
            }
        }
        return bytes.flip();
    }
}
