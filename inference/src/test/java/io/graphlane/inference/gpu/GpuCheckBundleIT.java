package io.graphlane.inference.gpu;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code scripts/gpu-check.sh}'s archive for GPU hosts without Java: packed once for this class ({@code --pack}, from
 * backend-gpu's test classes and this module's test class path, the same class path {@code --bundle} builds with
 * Maven), it must stay within the 60 MiB an upload allows, and {@code --run} from the unpacked archive must run on
 * the bundle's own Java runtime with no {@code java} on {@code PATH}: here, without a GPU, it reports the missing
 * driver and exits 3. Skipped, with the reason, only where the archive cannot be built (backend-gpu's test classes
 * not built in this reactor, or no jlink, zip, unzip, xz or tar).
 */
class GpuCheckBundleIT {
    private static final long LIMIT = 60L * 1024 * 1024;
    /** What gpu-check.sh --run calls, linked into a folder that becomes the whole PATH (no java among them). */
    private static final List<String> TOOLS = List.of("bash", "sh", "env", "cat", "cut", "date", "dirname", "basename", "grep", "sed",
            "awk", "tee", "timeout", "mkdir", "rm", "tr", "paste", "stat", "readlink", "head", "tail", "sort", "wc", "ls", "cp", "xz",
            "tar", "mktemp");

    @TempDir
    static Path work;
    private static Path repo;
    private static Path archive;
    private static String packOutput;

    @BeforeAll
    static void packTheArchiveOnce() throws Exception {
        repo = Path.of("").toAbsolutePath().getParent();
        Path script = repo.resolve("scripts/gpu-check.sh");
        Path gpuTestClasses = repo.resolve("backend-gpu/target/test-classes");
        assumeTrue(Files.isRegularFile(script), "no scripts/gpu-check.sh above " + Path.of("").toAbsolutePath());
        assumeTrue(Files.isDirectory(gpuTestClasses.resolve("io/graphlane/backend/gpu")),
                "backend-gpu's test classes are not built (" + gpuTestClasses + "): build with -pl inference -am");
        for (String tool : List.of("jlink", "zip", "unzip", "xz", "tar")) {
            assumeTrue(which(tool) != null, tool + " is not on PATH: the archive cannot be built here");
        }
        String classPath = System.getProperty("surefire.test.class.path");
        assumeTrue(classPath != null && !classPath.isBlank(), "the test class path is unknown (no surefire.test.class.path)");

        Path cpFile = work.resolve("classpath.txt");
        Files.writeString(cpFile, gpuTestClasses + ":" + classPath);
        Path out = Path.of("target/gpu-check-it").toAbsolutePath();
        ProcessResult pack = run(List.of("bash", script.toString(), "--pack"), repo,
                Map.of("GPU_CHECK_OUT", out.toString(), "GPU_CHECK_CLASSPATH_FILE", cpFile.toString()), 540);
        packOutput = pack.output;
        assertEquals(0, pack.exitCode, "gpu-check.sh --pack failed:\n" + pack.output);
        List<String> lines = pack.output.strip().lines().toList();
        archive = Path.of(lines.get(lines.size() - 1));
        assertTrue(Files.isRegularFile(archive), "the last line names the archive: " + lines.get(lines.size() - 1));
    }

    @Test
    void theArchiveFitsIn60MiB() throws IOException {
        long size = Files.size(archive);
        assertTrue(size <= LIMIT, archive + " is " + size + " bytes, over " + LIMIT + "\n" + packOutput);
    }

    @Test
    void runFromTheUnpackedArchiveNeedsNoJavaOnPathAndReportsTheMissingGpu() throws Exception {
        Path unpacked = Files.createDirectories(work.resolve("host"));
        ProcessResult untar = run(List.of("tar", "xJf", archive.toString()), unpacked, Map.of(), 120);
        assertEquals(0, untar.exitCode, untar.output);
        Path bin = Files.createDirectories(work.resolve("bin"));
        for (String tool : TOOLS) {
            Path target = which(tool);
            if (target != null) {
                Files.createSymbolicLink(bin.resolve(tool), target);
            }
        }
        assertTrue(which("java", bin.toString()) == null, "the PATH of the run holds no java");

        ProcessResult check = run(List.of(bin.resolve("bash").toString(), "graphlane-gpu-check/scripts/gpu-check.sh", "--run"), unpacked,
                Map.of("PATH", bin.toString(), "GPU_CHECK_BUDGET_S", "240"), 300);
        String out = check.output;
        assertTrue(out.contains("GPUCHECK probe java on PATH: none"), out);
        assertTrue(out.contains("GPUCHECK   host-side          passed"), "the host-side laws ran on the bundle's runtime:\n" + out);
        assertTrue(out.contains("libcuda.so.1"), "the missing driver is named:\n" + out);
        assertTrue(out.contains("GPUCHECK result: nothing ran on a GPU"), out);
        assertEquals(3, check.exitCode, out);
    }

    private record ProcessResult(int exitCode, String output) {
    }

    private static ProcessResult run(List<String> command, Path dir, Map<String, String> env, long timeoutSeconds) throws Exception {
        Path log = Files.createTempFile("gpu-check-it", ".log");
        try {
            ProcessBuilder pb = new ProcessBuilder(command).directory(dir.toFile()).redirectErrorStream(true).redirectOutput(log.toFile());
            pb.environment().putAll(env);
            Process p = pb.start();
            if (!p.waitFor(timeoutSeconds, TimeUnit.SECONDS)) {
                p.descendants().forEach(ProcessHandle::destroyForcibly);
                p.destroyForcibly();
                return new ProcessResult(-1, String.join(" ", command) + " did not finish within " + timeoutSeconds + " s:\n"
                        + Files.readString(log, StandardCharsets.UTF_8));
            }
            return new ProcessResult(p.exitValue(), Files.readString(log, StandardCharsets.UTF_8));
        } finally {
            Files.deleteIfExists(log);
        }
    }

    private static Path which(String tool) {
        return which(tool, System.getenv().getOrDefault("PATH", "/usr/bin:/bin"));
    }

    private static Path which(String tool, String path) {
        List<Path> candidates = new ArrayList<>();
        for (String entry : path.split(":")) {
            if (!entry.isBlank()) {
                candidates.add(Path.of(entry, tool));
            }
        }
        return candidates.stream().filter(Files::isExecutable).findFirst().map(p -> {
            try {
                return p.toRealPath();
            } catch (IOException e) {
                return p;
            }
        }).orElse(null);
    }
}
