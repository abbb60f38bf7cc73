package io.graphlane.inference.gpu;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code scripts/torch_decode_baseline.py}, the PyTorch eager baseline of the GPU check: it compiles, refuses bad
 * options naming them, and without torch says so in one GPUCHECK line and exits 0 (the check goes on). Skipped, with
 * the reason, where no python3 is on PATH.
 */
class TorchBaselineScriptTest {
    private static final Path SCRIPT = Path.of("").toAbsolutePath().getParent().resolve("scripts/torch_decode_baseline.py");

    @TempDir
    Path dir;

    private record Result(int exitCode, String output) {
    }

    private static Result python(String... args) throws Exception {
        List<String> command = new ArrayList<>(List.of("python3"));
        command.addAll(List.of(args));
        Process p;
        try {
            p = new ProcessBuilder(command).redirectErrorStream(true).start();
        } catch (java.io.IOException e) {
            assumeTrue(false, "python3 is not on PATH: " + e.getMessage());
            throw e;
        }
        p.getOutputStream().close();
        byte[] out = p.getInputStream().readAllBytes();
        assertTrue(p.waitFor(60, TimeUnit.SECONDS), "python3 " + String.join(" ", args) + " did not finish");
        return new Result(p.exitValue(), new String(out, StandardCharsets.UTF_8));
    }

    @Test
    void theScriptCompiles() throws Exception {
        assumeTrue(Files.isRegularFile(SCRIPT), "no " + SCRIPT);
        Result r = python("-c", "import py_compile, sys; py_compile.compile(sys.argv[1], cfile=sys.argv[2], doraise=True)",
                SCRIPT.toString(), dir.resolve("baseline.pyc").toString());
        assertEquals(0, r.exitCode, r.output);
    }

    @Test
    void aBadRequestCountIsRefusedNamingTheOption() throws Exception {
        Result r = python(SCRIPT.toString(), dir.toString(), "--requests", "0,8");
        assertEquals(2, r.exitCode, r.output);
        assertTrue(r.output.contains("--requests: every count must be >= 1"), r.output);
    }

    @Test
    void withoutTorchItReportsASkipAndExitsZero() throws Exception {
        assumeTrue(python("-c", "import torch").exitCode != 0, "torch is installed here: the skip path does not apply");
        Result r = python(SCRIPT.toString(), dir.toString());
        assertEquals(0, r.exitCode, r.output);
        assertTrue(r.output.startsWith("GPUCHECK torch-decode-tokens-per-second SKIPPED: "), r.output);
        assertTrue(r.output.contains("torch"), r.output);
    }
}
