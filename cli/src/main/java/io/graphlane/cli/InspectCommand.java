package io.graphlane.cli;

import com.fasterxml.jackson.core.JsonProcessingException;
import io.graphlane.checkpoint.CheckpointCatalog;
import io.graphlane.checkpoint.ModelCheckpoint;
import io.graphlane.checkpoint.TensorLocation;
import io.graphlane.checkpoint.config.ModelConfig;
import io.graphlane.checkpoint.gguf.GgmlType;
import io.graphlane.checkpoint.gguf.GgufFile;
import io.graphlane.checkpoint.gguf.GgufTensorInfo;
import io.graphlane.checkpoint.gguf.GgufValue;
import io.graphlane.checkpoint.gguf.GgufValueType;
import io.graphlane.checkpoint.json.StrictJson;
import io.graphlane.core.tensor.DType;
import io.graphlane.inference.model.ModelDirectory;
import io.graphlane.inference.sampling.GenerationDefaults;
import io.graphlane.inference.tokenizer.TokenizerConfig;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.stream.Collectors;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/**
 * {@code graphlane inspect MODEL [--json]}: validates a model directory or GGUF file exactly as a load would
 * (config.json or the GGUF metadata read as one, every header, the shard index, the tensors the architecture needs) and
 * prints its catalogue (for a GGUF file: its metadata, short values and arrays by type and length, and its tensor table
 * with each tensor's block type), then the settings a load applies from generation_config.json and tokenizer_config.json (sampling
 * defaults, special tokens added, decode clean-up, chat template source). A refused checkpoint ends with exit status 2 and one line naming the file and problem.
 */
@Command(name = "inspect",
        mixinStandardHelpOptions = true,
        description = "Validate a Hugging Face model directory or a GGUF file as a load would and print its tensor catalogue (and a GGUF file's metadata).")
public final class InspectCommand implements Callable<Integer> {

    @Parameters(index = "0", paramLabel = "MODEL", description = "The model: a Hugging Face directory (config.json and safetensors weights), a GGUF file, or a directory holding exactly one.")
    Path dir;

    @Option(names = "--json", description = "Print one JSON object instead of a table.")
    boolean json;

    @CommandLine.Spec
    CommandLine.Model.CommandSpec spec;

    @Override
    public Integer call() {
        // the load's own checks (config.json, headers, tensors, the model directory's settings): what inspect accepts, run loads
        ModelDirectory directory = ModelDirectory.open(dir);
        ModelCheckpoint model = directory.checkpoint();
        GenerationDefaults defaults = GenerationDefaults.read(directory.settingsDir());
        TokenizerConfig tokenizer = TokenizerConfig.read(directory.settingsDir());
        PrintWriter out = spec.commandLine().getOut();
        if (json) {
            out.println(toJson(model, settings(defaults, tokenizer)));
        } else {
            printTable(model, out);
            out.println();
            settings(defaults, tokenizer).forEach((k, v) -> out.printf("%-22s %s%n", k + ":", v));
        }
        out.flush();
        return 0;
    }

    /**
     * What a load applies from generation_config.json and tokenizer_config.json (and chat_template.jinja): the sampling
     * defaults a server gives a request that leaves them out, the special tokens encoding adds, the decode clean-up,
     * and where the chat template comes from.
     */
    private static Map<String, String> settings(GenerationDefaults defaults, TokenizerConfig tokenizer) {
        Map<String, String> s = new LinkedHashMap<>();
        s.put("sampling defaults", defaults.describe() + (defaults.isEmpty() ? "" : " (" + GenerationDefaults.FILE_NAME + ")"));
        s.put("special tokens added", tokenizer.overridesPostProcessor()
                ? "add_bos_token " + tokenizer.addBosToken().orElse(false) + ", add_eos_token " + tokenizer.addEosToken().orElse(false)
                        + " (" + TokenizerConfig.FILE_NAME + ")"
                : "as tokenizer.json's post-processor adds them");
        s.put("decode clean-up", "clean_up_tokenization_spaces " + tokenizer.cleanUpTokenizationSpaces());
        s.put("chat template", tokenizer.chatTemplate().isPresent() ? tokenizer.chatTemplateSource() : "none");
        return s;
    }

    private static String toJson(ModelCheckpoint model, Map<String, String> settings) {
        CheckpointCatalog catalog = model.catalog();
        Map<String, Object> root = new LinkedHashMap<>();
        root.put("format", catalog.format());
        root.put("architecture", model.config().architecture().hfName());
        root.put("rope", model.config().rope().toString());
        root.put("hidden_act", model.config().hiddenAct().hfName());
        model.config().gemma().ifPresent(g -> root.put("gemma", g.toString()));
        model.config().moe().ifPresent(m -> root.put("experts", m.toString()));
        root.put("tensor_count", catalog.tensors().size());
        root.put("total_bytes", catalog.totalBytes());
        List<Map<String, Object>> tensors = new ArrayList<>();
        if (model.gguf() != null) {
            GgufFile file = model.gguf().file();
            root.put("gguf_version", file.version());
            Map<String, String> metadata = new LinkedHashMap<>();
            file.metadata().forEach((k, v) -> metadata.put(k, shortValue(v)));
            root.put("metadata", metadata);
            for (GgufTensorInfo t : file.tensors().values()) {
                Map<String, Object> entry = new LinkedHashMap<>();
                entry.put("name", t.name());
                entry.put("type", t.type().name());
                entry.put("shape", t.shape().dims());
                entry.put("bytes", t.byteSize());
                tensors.add(entry);
            }
        }
        for (TensorLocation t : model.gguf() != null ? List.<TensorLocation>of() : catalog.tensors().values()) {
            Map<String, Object> entry = new LinkedHashMap<>();
            entry.put("name", t.name());
            entry.put("dtype", t.spec().dtype().name());
            entry.put("shape", t.spec().shape().dims());
            entry.put("bytes", t.entry().byteLength());
            entry.put("shard", t.shardName());
            tensors.add(entry);
        }
        root.put("tensors", tensors);
        settings.forEach((k, v) -> root.put(k.replace(' ', '_').replace('-', '_'), v));
        try {
            return StrictJson.mapper().writeValueAsString(root);
        } catch (JsonProcessingException e) {
            throw new IllegalStateException("cannot render the catalogue as JSON", e);
        }
    }

    private static void printTable(ModelCheckpoint model, PrintWriter out) {
        CheckpointCatalog catalog = model.catalog();
        ModelConfig c = model.config();
        int shards = catalog.shards().size();
        GgufFile gguf = model.gguf() == null ? null : model.gguf().file();
        out.printf("format:       %s (%s)%n", catalog.format(), gguf != null ? "v" + gguf.version() + ", " + gguf.file().getFileName()
                : catalog.isSharded() ? shards + " shards" : CheckpointCatalog.SINGLE_FILE);
        out.printf("architecture: %s (layers %d, hidden %d, heads %d, kv heads %d, head dim %d, mlp %d, vocab %d%s)%n",
                c.architecture().hfName(), c.numHiddenLayers(), c.hiddenSize(), c.numAttentionHeads(),
                c.numKeyValueHeads(), c.headDim(), c.intermediateSize(), c.vocabSize(),
                c.tieWordEmbeddings() ? ", tied embeddings" : "");
        out.printf("rope:         %s%n", c.rope());
        out.printf("mlp:          %s%s%n", c.hiddenAct().hfName(), c.mlpBias() ? ", biases" : "");
        c.gemma().ifPresent(g -> out.printf("gemma:        %s%n", g));
        c.moe().ifPresent(m -> out.printf("experts:      %s%n", m));
        if (gguf != null) {
            printGguf(gguf, out);
            return;
        }
        Map<DType, Integer> mix = new EnumMap<>(DType.class);
        for (TensorLocation t : catalog.tensors().values()) {
            mix.merge(t.spec().dtype(), 1, Integer::sum);
        }
        out.printf("dtypes:       %s%n", mix.entrySet().stream()
                .map(e -> e.getKey() + " ×" + e.getValue()).collect(Collectors.joining(", ")));
        out.printf("tensors:      %d%n", catalog.tensors().size());
        out.printf("total bytes:  %d%n", catalog.totalBytes());
        out.println();
        int nameWidth = "NAME".length();
        int shapeWidth = "SHAPE".length();
        for (TensorLocation t : catalog.tensors().values()) {
            nameWidth = Math.max(nameWidth, t.name().length());
            shapeWidth = Math.max(shapeWidth, t.spec().shape().toString().length());
        }
        String row = "%-" + nameWidth + "s  %-5s  %-" + shapeWidth + "s  %12s  %s%n";
        out.printf(row, "NAME", "DTYPE", "SHAPE", "BYTES", "SHARD");
        for (TensorLocation t : catalog.tensors().values()) {
            out.printf(row, t.name(), t.spec().dtype(), t.spec().shape(), t.entry().byteLength(), t.shardName());
        }
    }

    /** A GGUF file's metadata (short values, arrays by element type and length) and its tensor table as stored. */
    private static void printGguf(GgufFile file, PrintWriter out) {
        Map<GgmlType, Integer> mix = new EnumMap<>(GgmlType.class);
        long bytes = 0;
        for (GgufTensorInfo t : file.tensors().values()) {
            mix.merge(t.type(), 1, Integer::sum);
            bytes += t.byteSize();
        }
        out.printf("types:        %s%n", mix.entrySet().stream()
                .map(e -> e.getKey() + " ×" + e.getValue()).collect(Collectors.joining(", ")));
        out.printf("tensors:      %d%n", file.tensors().size());
        out.printf("total bytes:  %d%n", bytes);
        out.println();
        int keyWidth = "KEY".length();
        for (String k : file.metadata().keySet()) {
            keyWidth = Math.max(keyWidth, k.length());
        }
        String meta = "%-" + keyWidth + "s  %-16s  %s%n";
        out.printf(meta, "KEY", "TYPE", "VALUE");
        file.metadata().forEach((k, v) -> out.printf(meta, k, v.type() == GgufValueType.ARRAY ? "ARRAY" : v.type().name(), shortValue(v)));
        out.println();
        int nameWidth = "NAME".length();
        int shapeWidth = "SHAPE".length();
        for (GgufTensorInfo t : file.tensors().values()) {
            nameWidth = Math.max(nameWidth, t.name().length());
            shapeWidth = Math.max(shapeWidth, t.shape().toString().length());
        }
        String row = "%-" + nameWidth + "s  %-5s  %-" + shapeWidth + "s  %12s%n";
        out.printf(row, "NAME", "TYPE", "SHAPE", "BYTES");
        for (GgufTensorInfo t : file.tensors().values()) {
            out.printf(row, t.name(), t.type(), t.shape(), t.byteSize());
        }
    }

    /** At most {@value #SHORT} characters of a metadata value on one line; an array as its element type and length. */
    static String shortValue(GgufValue v) {
        String text = v.toString().replace("\\", "\\\\").replace("\n", "\\n").replace("\r", "\\r").replace("\t", "\\t");
        return text.length() <= SHORT ? text : text.substring(0, SHORT - 1) + "…";
    }

    private static final int SHORT = 60;
}
