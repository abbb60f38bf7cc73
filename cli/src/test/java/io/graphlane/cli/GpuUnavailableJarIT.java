package io.graphlane.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeFalse;

import io.graphlane.backend.gpu.CudaLibraries;
import io.graphlane.backend.gpu.CudaLibrary;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * The built jar as a user runs it on a machine without a usable GPU: {@code run --backend gpu} and
 * {@code bench decode} end with status 2 and exactly one line on stderr that names what is missing
 * and suggests {@code --backend cpu}, with no stack trace. Runs after the jar is built; skipped where
 * the CUDA driver loads (there the GPU run is checked by scripts/gpu-check.sh).
 */
class GpuUnavailableJarIT {
    private static final Path MODULE = Path.of("").toAbsolutePath();
    private static final Path JAR = MODULE.resolve("target/graphlane.jar");
    private static final Path FIXTURE = MODULE.resolve("../checkpoint/src/test/resources/tiny-llama").normalize();

    private record Result(int status, String out, String err) {
    }

    private static Result java(String... args) throws IOException, InterruptedException {
        List<String> command = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(), "-jar",
                JAR.toString()));
        command.addAll(List.of(args));
        Path out = Files.createTempFile("graphlane-gpu-it", ".out");
        Path err = Files.createTempFile("graphlane-gpu-it", ".err");
        try {
            Process p = new ProcessBuilder(command).redirectOutput(out.toFile()).redirectError(err.toFile()).start();
            assertTrue(p.waitFor(120, TimeUnit.SECONDS), "graphlane " + String.join(" ", args) + " did not end within 120 s");
            return new Result(p.exitValue(), Files.readString(out, StandardCharsets.UTF_8), Files.readString(err, StandardCharsets.UTF_8));
        } finally {
            Files.deleteIfExists(out);
            Files.deleteIfExists(err);
        }
    }

    private static void assertOneLineSuggestingTheCpu(Result r, String what) {
        assertEquals(GraphlaneCli.EXIT_USER_ERROR, r.status(), what + ": " + r.err());
        List<String> lines = r.err().strip().lines().toList();
        assertEquals(1, lines.size(), what + ": one line on stderr, no stack trace: " + r.err());
        String line = lines.get(0);
        assertTrue(line.startsWith("graphlane: "), line);
        assertTrue(line.contains("--backend cpu"), line);
        assertTrue(line.contains("libcuda.so.1") || line.contains("no CUDA device") || line.contains("device"), "names what is missing: " + line);
        assertFalse(r.err().contains("\tat "), "no stack trace: " + r.err());
        assertEquals("", r.out().strip(), what + ": nothing on stdout: " + r.out());
    }

    @Test
    void runOnTheGpuBackendEndsWithOneLineNamingWhatIsMissing() throws Exception {
        assumeFalse(CudaLibraries.isAvailable(CudaLibrary.DRIVER), "a CUDA driver loads here: the GPU run is checked by scripts/gpu-check.sh");
        assertOneLineSuggestingTheCpu(java("run", "--backend", "gpu"), "run --backend gpu (demo model)");
        assertOneLineSuggestingTheCpu(java("run", "--backend", "gpu", "--device", "1", "--model", FIXTURE.toString()), "run --backend gpu --device 1");
        assertOneLineSuggestingTheCpu(java("bench", "decode", "--model", FIXTURE.toString()), "bench decode");
    }
}
