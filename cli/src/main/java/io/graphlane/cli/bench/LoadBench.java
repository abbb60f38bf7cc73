package io.graphlane.cli.bench;

import io.graphlane.actors.materialize.MaterializationSettings;
import io.graphlane.actors.materialize.MaterializationSupervisor;
import io.graphlane.actors.materialize.UnitReply;
import io.graphlane.actors.materialize.WeightRequest;
import io.graphlane.actors.materialize.WeightSource;
import io.graphlane.backend.cpu.CpuBackend;
import io.graphlane.backend.cpu.CpuExecutor;
import io.graphlane.backend.cpu.param.CpuParameter;
import io.graphlane.backend.cpu.param.CpuParameterBackend;
import io.graphlane.checkpoint.CheckpointSource;
import io.graphlane.checkpoint.TensorLocation;
import io.graphlane.checkpoint.safetensors.SafetensorsWriter;
import io.graphlane.core.GraphlaneException;
import io.graphlane.core.tensor.DType;
import io.graphlane.core.tensor.TensorSpec;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.management.ManagementFactory;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.stream.Stream;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.javadsl.AskPattern;
import picocli.CommandLine;
import picocli.CommandLine.ArgGroup;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code graphlane bench load}: loads a checkpoint into CPU weights through the materialization
 * supervisor, and in the same run reads the same files sequentially with a warm page cache as the
 * baseline. With {@code --synthetic-mb N} it first writes an F32 checkpoint of N MB (deleted again
 * afterwards). The load is run once untimed first, as the read is, unless {@code --no-warmup}.
 */
@Command(name = "load",
        mixinStandardHelpOptions = true,
        description = {"Loads a checkpoint into CPU weights through the materialization supervisor and compares "
                + "its throughput with a plain sequential read of the same files (warm page cache).",
            "Both are run once untimed first (page cache; JVM and actors), unless --no-warmup."})
public final class LoadBench implements Callable<Integer> {

    static final class Source {
        @Option(names = "--model", paramLabel = "MODEL", description = "A Hugging Face model directory to load, a GGUF file, or a directory holding exactly one (its tensors as stored).")
        Path model;

        @Option(names = "--synthetic-mb", paramLabel = "N", description = "Write an F32 checkpoint of N MB first, load it, delete it.")
        Integer syntheticMb;
    }

    @ArgGroup(exclusive = true, multiplicity = "1")
    Source source;

    @Option(names = "--json", description = "Print one JSON object.")
    boolean json;

    @Option(names = "--tensor-mb", defaultValue = "16", paramLabel = "MB",
            description = "Size of each synthetic tensor (default: ${DEFAULT-VALUE}).")
    int tensorMb;

    @Option(names = "--unit-tensors", defaultValue = "8", paramLabel = "N",
            description = "Tensors per atomic unit sent to the supervisor (default: ${DEFAULT-VALUE}).")
    int unitTensors;

    @Option(names = "--work-dir", paramLabel = "DIR",
            description = "Where to write the synthetic checkpoint (default: the system temporary directory).")
    Path workDir;

    @Option(names = "--timeout-s", defaultValue = "600", paramLabel = "S",
            description = "Give up if the load takes longer (default: ${DEFAULT-VALUE}).")
    int timeoutSeconds;

    @Option(names = "--touch",
            description = "After binding, read one float of every 4 KiB page of every weight, and count that in the load time "
                    + "(a zero-copy load otherwise leaves the mapped pages to be faulted in at first use).")
    boolean touch;

    @Option(names = "--no-warmup", description = "Time the first load, class loading and actor start-up included.")
    boolean noWarmup;

    @CommandLine.Spec
    CommandLine.Model.CommandSpec spec;

    @Override
    public Integer call() throws Exception {
        if (tensorMb < 1 || unitTensors < 1 || timeoutSeconds < 1) {
            throw new IllegalArgumentException("--tensor-mb, --unit-tensors and --timeout-s must be at least 1, found "
                    + tensorMb + ", " + unitTensors + " and " + timeoutSeconds);
        }
        Path dir = source.model;
        Path synthetic = null;
        if (source.syntheticMb != null) {
            if (source.syntheticMb < 1) {
                throw new IllegalArgumentException("--synthetic-mb must be at least 1, found " + source.syntheticMb);
            }
            Path base = workDir != null ? workDir : Path.of(System.getProperty("java.io.tmpdir"));
            Files.createDirectories(base);
            synthetic = Files.createTempDirectory(base, "graphlane-load-");
            dir = synthetic;
        }
        try {
            if (synthetic != null) {
                writeSynthetic(synthetic, source.syntheticMb, tensorMb);
            }
            LoadBenchResult result = run(dir);
            spec.commandLine().getOut().println(json ? result.toJson() : result.toText());
            spec.commandLine().getOut().flush();
            return 0;
        } finally {
            if (synthetic != null) {
                deleteTree(synthetic);
            }
        }
    }

    /** Writes {@code totalMb} MB of F32 tensors of {@code tensorMb} MB each (the last one smaller) as one safetensors file. */
    static void writeSynthetic(Path dir, int totalMb, int tensorMb) {
        int columns = 1024;
        long rowBytes = columns * 4L;
        long rowsPerMb = (1 << 20) / rowBytes;
        ByteBuffer megabyte = ByteBuffer.allocateDirect(1 << 20).order(ByteOrder.LITTLE_ENDIAN);
        for (int i = 0; megabyte.hasRemaining(); i++) {
            megabyte.putFloat((i % 4093) * 1e-3f);
        }
        megabyte.flip();
        SafetensorsWriter writer = new SafetensorsWriter().metadata("format", "pt").metadata("graphlane", "bench load synthetic");
        int tensors = (totalMb + tensorMb - 1) / tensorMb;
        for (int t = 0; t < tensors; t++) {
            int mb = Math.min(tensorMb, totalMb - t * tensorMb);
            writer.add(String.format("layers.%04d.weight", t), TensorSpec.of(DType.F32, mb * rowsPerMb, columns), out -> {
                for (int m = 0; m < mb; m++) {
                    ByteBuffer chunk = megabyte.duplicate();
                    while (chunk.hasRemaining()) {
                        out.write(chunk);
                    }
                }
            });
        }
        writer.write(dir.resolve("model.safetensors"));
    }

    private LoadBenchResult run(Path dir) throws Exception {
        // a GGUF file's tensors are leased as stored (quantized ones as their raw blocks), as safetensors tensors are
        try (CheckpointSource checkpoint = io.graphlane.checkpoint.ModelCheckpoint.isGguf(dir)
                ? io.graphlane.checkpoint.gguf.GgufCheckpoint.open(dir).openSource() : CheckpointSource.open(dir)) {
            List<TensorLocation> tensors = new ArrayList<>(checkpoint.catalog().tensors().values());
            Set<Path> files = new LinkedHashSet<>();
            for (TensorLocation t : tensors) {
                files.add(t.shardPath());
            }
            long bytes = checkpoint.catalog().totalBytes();

            sequentialRead(files); // warms the page cache; not timed
            double raw = Math.min(sequentialRead(files), sequentialRead(files));

            try (CpuBackend device = new CpuBackend("cpu-bench-load")) {
                CpuExecutor loadingLane = device.forkExecutors(device.rootExecutor(), 1).get(0);
                CpuParameterBackend params = new CpuParameterBackend(device);
                MaterializationSettings settings = new MaterializationSettings(4, tensors.size());
                ActorSystem<MaterializationSupervisor.Command<CpuParameter>> system = ActorSystem.create(
                        MaterializationSupervisor.create(params, loadingLane, settings), "graphlane-bench-load");
                try {
                    if (!noWarmup) {
                        load(system, checkpoint, tensors, dir).close(); // warms the JVM and the actors; not timed
                    }
                    long heapBefore = usedHeapAfterGc();
                    LoadedWeights loaded = load(system, checkpoint, tensors, dir);
                    long heapGrowth = usedHeapAfterGc() - heapBefore;
                    int zeroCopy = loaded.zeroCopy();
                    loaded.close();
                    return new LoadBenchResult(bytes, loaded.seconds(), raw, heapGrowth, checkpoint.openLeaseCount(), zeroCopy, tensors.size());
                } finally {
                    system.terminate();
                    system.getWhenTerminated().toCompletableFuture().get(30, TimeUnit.SECONDS);
                }
            }
        }
    }

    /** The parameters one load bound, and how long it took. */
    private record LoadedWeights(List<CpuParameter> parameters, double seconds) implements AutoCloseable {
        int zeroCopy() {
            return (int) parameters.stream().filter(p -> p.weight().isZeroCopy()).count();
        }

        /** Unbinds and closes every weight. */
        @Override
        public void close() {
            parameters.forEach(CpuParameter::close);
        }
    }

    /** Leases every tensor, sends them in units to the supervisor, waits for every answer (and touches the pages if asked). */
    private LoadedWeights load(ActorSystem<MaterializationSupervisor.Command<CpuParameter>> system, CheckpointSource checkpoint,
                               List<TensorLocation> tensors, Path dir) throws InterruptedException {
        List<CpuParameter> parameters = new ArrayList<>(tensors.size());
        long start = System.nanoTime();
        List<CompletableFuture<UnitReply>> replies = new ArrayList<>();
        for (int from = 0; from < tensors.size(); from += unitTensors) {
            List<WeightRequest<CpuParameter>> unit = new ArrayList<>();
            for (TensorLocation t : tensors.subList(from, Math.min(tensors.size(), from + unitTensors))) {
                CpuParameter p = new CpuParameter(t.name(),
                        new TensorSpec(CpuParameterBackend.materializedDType(t.spec().dtype()), t.spec().shape()));
                parameters.add(p);
                unit.add(new WeightRequest<>(t.name(), p, WeightSource.of(checkpoint.lease(t.name()))));
            }
            String unitName = "unit-" + (from / unitTensors);
            replies.add(AskPattern.<MaterializationSupervisor.Command<CpuParameter>, UnitReply>ask(system,
                    replyTo -> new MaterializationSupervisor.MaterializeUnit<>(unitName, unit, replyTo),
                    Duration.ofSeconds(timeoutSeconds), system.scheduler()).toCompletableFuture());
        }
        List<String> failures = new ArrayList<>();
        for (CompletableFuture<UnitReply> reply : replies) {
            if (awaitReply(reply) instanceof UnitReply.Failed failed) {
                failures.add(failed.describe());
            }
        }
        if (!failures.isEmpty()) {
            parameters.forEach(CpuParameter::close);
            throw new GraphlaneException("loading " + dir + " failed: " + String.join("; ", failures));
        }
        if (touch) {
            touchPages(parameters);
        }
        return new LoadedWeights(parameters, (System.nanoTime() - start) / 1e9);
    }

    /** Reads one float of every 4 KiB page of every bound weight, so that each page is resident in this process. */
    private static float touchPages(List<CpuParameter> parameters) {
        float sum = 0;
        for (CpuParameter p : parameters) {
            ByteBuffer bytes = p.weight().bytes();
            for (int offset = 0; offset + 4 <= bytes.limit(); offset += 4096) {
                sum += bytes.getFloat(offset);
            }
        }
        return sum;
    }

    private UnitReply awaitReply(CompletableFuture<UnitReply> reply) throws InterruptedException {
        try {
            return reply.get(timeoutSeconds, TimeUnit.SECONDS);
        } catch (ExecutionException | TimeoutException e) {
            throw new GraphlaneException("bench load: no answer from the materialization supervisor within "
                    + timeoutSeconds + " s (--timeout-s): " + e.getMessage(), e);
        }
    }

    /** Reads every file start to end into one reused 4 MB direct buffer; returns the wall time in seconds. */
    static double sequentialRead(Set<Path> files) {
        ByteBuffer buffer = ByteBuffer.allocateDirect(4 << 20);
        long start = System.nanoTime();
        for (Path file : files) {
            try (FileChannel ch = FileChannel.open(file, StandardOpenOption.READ)) {
                while (ch.read(buffer) >= 0) {
                    buffer.clear();
                }
            } catch (IOException e) {
                throw new UncheckedIOException("bench load: cannot read " + file + ": " + e.getMessage(), e);
            }
        }
        return (System.nanoTime() - start) / 1e9;
    }

    private static long usedHeapAfterGc() {
        for (int i = 0; i < 3; i++) {
            System.gc();
        }
        return ManagementFactory.getMemoryMXBean().getHeapMemoryUsage().getUsed();
    }

    private static void deleteTree(Path dir) throws IOException {
        try (Stream<Path> walk = Files.walk(dir)) {
            for (Path p : walk.sorted(Comparator.reverseOrder()).toList()) {
                Files.deleteIfExists(p);
            }
        }
    }
}
