package io.graphlane.checkpoint.gguf;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.graphlane.checkpoint.CheckpointCatalog;
import io.graphlane.checkpoint.CheckpointException;
import io.graphlane.checkpoint.CheckpointSource;
import io.graphlane.checkpoint.TensorLocation;
import io.graphlane.checkpoint.recipe.DerivedWeight;
import io.graphlane.checkpoint.recipe.Recipe;
import io.graphlane.checkpoint.recipe.RecipeException;
import io.graphlane.checkpoint.safetensors.TensorEntry;
import io.graphlane.core.param.EncodedLease;
import io.graphlane.core.tensor.DType;
import io.graphlane.core.tensor.Shape;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.stream.Stream;

/**
 * A validated GGUF file as a graphlane checkpoint: its tensors as a {@link CheckpointCatalog} (under
 * their GGUF names, leasable like safetensors tensors: an unquantized tensor as its dtype in row-major
 * shape, a quantized one as {@code U8} rows of whole blocks), its metadata as a Hugging Face
 * {@code config.json}, {@code tokenizer.json} and {@code tokenizer_config.json}, and each Hugging Face
 * weight as a {@link DerivedWeight} that renames, undoes llama.cpp's q/k row permutation,
 * dequantizes and takes the 1 off Gemma's norm weights, validated before any byte is read.
 */
public final class GgufCheckpoint {
    /** The file name extension of GGUF files. */
    public static final String EXTENSION = ".gguf";

    private final GgufFile file;
    private final CheckpointCatalog catalog;

    private GgufCheckpoint(GgufFile file, CheckpointCatalog catalog) {
        this.file = file;
        this.catalog = catalog;
    }

    /** True if {@code path} names a GGUF file or a directory holding one (without reading it). */
    public static boolean isGguf(Path path) {
        if (Files.isRegularFile(path)) {
            return path.getFileName().toString().toLowerCase(Locale.ROOT).endsWith(EXTENSION);
        }
        return Files.isDirectory(path) && !ggufFilesIn(path).isEmpty();
    }

    /**
     * The GGUF file {@code path} names: the file itself, or the one {@code .gguf} file of a directory.
     *
     * @throws CheckpointException naming the path if it is neither, or a directory holding several
     */
    public static Path locate(Path path) {
        if (Files.isRegularFile(path)) {
            if (!path.getFileName().toString().toLowerCase(Locale.ROOT).endsWith(EXTENSION)) {
                throw new CheckpointException(path + ": not a GGUF file (expected a name ending in " + EXTENSION + ")");
            }
            return path;
        }
        if (!Files.isDirectory(path)) {
            throw new CheckpointException(path + ": no such file or directory (expected a " + EXTENSION
                    + " file or a directory holding one)");
        }
        List<Path> found = ggufFilesIn(path);
        if (found.size() != 1) {
            throw new CheckpointException(path + ": holds " + found.size() + " " + EXTENSION + " files"
                    + (found.isEmpty() ? "" : " " + found.stream().map(p -> p.getFileName().toString()).toList())
                    + ", expected exactly one; name the file itself");
        }
        return found.get(0);
    }

    private static List<Path> ggufFilesIn(Path dir) {
        try (Stream<Path> s = Files.list(dir)) {
            return s.filter(Files::isRegularFile)
                    .filter(p -> p.getFileName().toString().toLowerCase(Locale.ROOT).endsWith(EXTENSION))
                    .sorted().toList();
        } catch (IOException e) {
            throw new CheckpointException(dir + ": cannot list the directory: " + e, e);
        }
    }

    /**
     * Opens and validates the GGUF file {@code path} names (see {@link #locate}).
     *
     * @throws CheckpointException naming the file and field of the first rule broken
     */
    public static GgufCheckpoint open(Path path) {
        Path gguf = locate(path);
        GgufFile file = GgufFile.read(gguf);
        Map<String, TensorLocation> locations = new LinkedHashMap<>();
        String shard = gguf.getFileName().toString();
        for (GgufTensorInfo t : file.tensors().values()) {
            TensorEntry entry = new TensorEntry(t.name(), t.storedSpec(), t.offset(), t.offset() + t.byteSize());
            locations.put(t.name(), TensorLocation.inFile(shard, gguf, entry, file.dataStart()));
        }
        Path dir = gguf.toAbsolutePath().getParent();
        return new GgufCheckpoint(file, CheckpointCatalog.ofFile(dir, "gguf", locations));
    }

    /** The validated file. */
    public GgufFile file() {
        return file;
    }

    /** The tensors under their GGUF names, as a catalogue of format {@code "gguf"}. */
    public CheckpointCatalog catalog() {
        return catalog;
    }

    /** A lease source on this file's tensors (one file: one open shard suffices). */
    public CheckpointSource openSource() {
        return CheckpointSource.of(catalog, 1);
    }

    /** {@code general.architecture}. */
    public String architecture() {
        return file.meta().requireString("general.architecture", "the model's architecture");
    }

    /**
     * The Hugging Face {@code config.json} of this model (see {@link GgufConfig}); reads the small RoPE
     * factor tensors it needs through {@code source}.
     */
    public ObjectNode hfConfig(CheckpointSource source) {
        Map<String, float[]> rope = new LinkedHashMap<>();
        for (String name : List.of(GgufConfig.ROPE_FREQS, GgufConfig.ROPE_FACTORS_LONG, GgufConfig.ROPE_FACTORS_SHORT)) {
            GgufTensorInfo t = file.tensor(name);
            if (t == null) {
                continue;
            }
            if (t.type() != GgmlType.F32 || t.rank() != 1) {
                throw new GgufFormatException(file.file(), "tensor '" + name + "' is " + t.type() + " "
                        + java.util.Arrays.toString(t.ne()) + ", expected a 1-dimensional F32 tensor");
            }
            EncodedLease lease = source.lease(name);
            try {
                ByteBuffer b = lease.bytes();
                float[] v = new float[(int) t.ne()[0]];
                for (int i = 0; i < v.length; i++) {
                    v[i] = b.getFloat(i * Float.BYTES);
                }
                rope.put(name, v);
            } finally {
                lease.release();
            }
        }
        return GgufConfig.toHfConfig(file.meta(), file.tensors(), rope);
    }

    /** The Hugging Face {@code tokenizer.json} of this model (see {@link GgufTokenizer}). */
    public ObjectNode tokenizerJson() {
        return GgufTokenizer.toTokenizerJson(file.meta());
    }

    /** The Hugging Face {@code tokenizer_config.json} of this model (see {@link GgufTokenizer}). */
    public ObjectNode tokenizerConfig() {
        return GgufTokenizer.toTokenizerConfig(file.meta());
    }

    /**
     * Every Hugging Face weight of this model by name, each derived from its GGUF tensor; tensors the
     * configuration takes in ({@code rope_freqs.weight}, {@code rope_factors_*}) have none.
     *
     * @throws CheckpointException naming the file and the tensor if one has no Hugging Face name or cannot be derived
     */
    public Map<String, DerivedWeight> weights(CheckpointSource source) {
        String arch = architecture();
        Map<String, DerivedWeight> out = new LinkedHashMap<>();
        for (GgufTensorInfo t : file.tensors().values()) {
            if (t.name().equals(GgufConfig.ROPE_FREQS) || t.name().equals(GgufConfig.ROPE_FACTORS_LONG)
                    || t.name().equals(GgufConfig.ROPE_FACTORS_SHORT)) {
                continue;
            }
            GgufTensorNames.Mapped m = GgufTensorNames.toHf(arch, t.name()).orElseThrow(() -> new GgufFormatException(
                    file.file(), "tensor '" + t.name() + "' has no Hugging Face name in architecture " + arch));
            out.put(m.hfName(), derive(source, t, m));
        }
        return out;
    }

    /**
     * The Hugging Face weight {@code hfName}, derived from its GGUF tensor: renamed, its q/k rows put back
     * in Hugging Face's order (llama), and dequantized to F32 if the file holds it quantized (an
     * unquantized tensor keeps its dtype).
     *
     * @throws CheckpointException naming the file and the tensor if there is no such tensor or it cannot be derived
     */
    public DerivedWeight weight(CheckpointSource source, String hfName) {
        String arch = architecture();
        String name = GgufTensorNames.fromHf(arch, hfName).orElseThrow(() -> new GgufFormatException(file.file(),
                "weight '" + hfName + "' has no GGUF name in architecture " + arch));
        GgufTensorInfo t = file.tensor(name);
        if (t == null) {
            throw new GgufFormatException(file.file(), "no tensor '" + name + "' (weight '" + hfName + "')");
        }
        return derive(source, t, GgufTensorNames.toHf(arch, name).orElseThrow());
    }

    private DerivedWeight derive(CheckpointSource source, GgufTensorInfo t, GgufTensorNames.Mapped m) {
        Objects.requireNonNull(source, "source");
        try {
            Recipe r = Recipe.source(source, t.name());
            switch (m.transform()) {
                case UNPERMUTE_Q, UNPERMUTE_K -> {
                    String key = m.transform() == GgufTensorNames.Transform.UNPERMUTE_Q ? "llama.attention.head_count"
                            : "llama.attention.head_count_kv";
                    long heads = file.meta().integer(key, 1, Integer.MAX_VALUE).orElseGet(() ->
                            file.meta().requireInteger("llama.attention.head_count", 1, Integer.MAX_VALUE,
                                    "the q/k row permutation"));
                    r = unpermute(r, heads, t);
                }
                case MINUS_ONE, NONE -> { }
                default -> throw new IllegalStateException(m.transform().toString());
            }
            if (t.type().isQuantized()) {
                r = r.dequantize(t.type());
            }
            if (m.transform() == GgufTensorNames.Transform.MINUS_ONE) {
                // the converter stored 1 + w (rounded to F32); the model adds the 1 back, to the same F32 value
                r = (r.spec().dtype() == DType.F32 ? r : r.cast(DType.F32)).offset(-1f);
            }
            return DerivedWeight.of(m.hfName(), r);
        } catch (RecipeException e) {
            throw new GgufFormatException(file.file(), "tensor '" + t.name() + "' (weight '" + m.hfName() + "'): "
                    + e.getMessage(), e);
        }
    }

    /** Undoes llama.cpp's {@code permute(w, heads)} on the rows (axis 0) of a stored tensor. */
    static Recipe unpermute(Recipe stored, long heads, GgufTensorInfo t) {
        Shape s = stored.spec().shape();
        long rows = s.dim(0);
        if (rows % heads != 0 || (rows / heads) % 2 != 0) {
            throw new RecipeException("q/k row permutation: " + rows + " rows are not " + heads
                    + " heads of an even head dimension");
        }
        long half = rows / heads / 2;
        if (s.rank() == 1) {
            return stored.reshape(heads, half, 2).transpose(0, 2, 1).reshape(rows);
        }
        if (s.rank() != 2) {
            throw new RecipeException("q/k row permutation: shape " + s + " of " + t + " is not a matrix or a vector");
        }
        long cols = s.dim(1);
        return stored.reshape(heads, half, 2, cols).transpose(0, 2, 1, 3).reshape(rows, cols);
    }

    /** Names of the tensors in table order. */
    public List<String> tensorNames() {
        return new ArrayList<>(file.tensors().keySet());
    }
}
