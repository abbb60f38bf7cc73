package io.graphlane.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeFalse;

import io.graphlane.backend.gpu.CudaLibraries;
import io.graphlane.backend.gpu.CudaLibrary;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;

/**
 * {@code serve --backend gpu}: the options are checked before anything starts, and on a host without a usable CUDA
 * device the command ends with one line naming what is missing (exit 2), having bound nothing. On a GPU host the served
 * run is checked by scripts/gpu-check.sh ({@code GpuServeCheck}).
 */
class ServeGpuBackendTest {
    private static final Path FIXTURE = Path.of("..", "checkpoint", "src", "test", "resources", "tiny-llama");

    private record Run(int status, String out, String err) {
    }

    private static Run cli(String... args) {
        CommandLine cli = GraphlaneCli.commandLine();
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        cli.setOut(new PrintWriter(out));
        cli.setErr(new PrintWriter(err));
        int status = cli.execute(args);
        return new Run(status, out.toString(), err.toString());
    }

    private static void assertOneLineRefusal(Run run, String expected) {
        assertEquals(GraphlaneCli.EXIT_USER_ERROR, run.status(), run.err());
        assertEquals(1, run.err().strip().lines().count(), "one line, no stack trace: " + run.err());
        assertTrue(run.err().contains(expected), run.err());
        assertEquals("", run.out().strip(), "nothing was served: " + run.out());
    }

    @Test
    void serveOnTheGpuWithoutAUsableGpuEndsWithOneLineNamingWhatIsMissing() {
        assumeFalse(CudaLibraries.isAvailable(CudaLibrary.DRIVER), "a CUDA driver loads here: the served GPU run is checked by scripts/gpu-check.sh");
        Run run = cli("serve", "--backend", "gpu", "--model", FIXTURE.toString(), "--port", "0");
        assertOneLineRefusal(run, "--backend cpu");
        assertTrue(run.err().contains("driver") || run.err().contains("libcuda"), "names the missing driver: " + run.err());
        Run second = cli("serve", "--backend", "gpu", "--device", "1", "--model", FIXTURE.toString(), "--port", "0");
        assertOneLineRefusal(second, "--backend cpu");
    }

    @Test
    void tensorParallelOnTheGpuIsRefusedNamingTheDeviceCount() {
        assertTrue(ServeBackendOptions.tensorParallelRefusal(2, 1).getMessage()
                .contains("--tensor-parallel 2 --backend gpu needs 2 CUDA devices, this host has 1 visible CUDA device"));
        assertTrue(ServeBackendOptions.tensorParallelRefusal(4, 2).getMessage().contains("this host has 2 visible CUDA devices"));
        assertTrue(ServeBackendOptions.tensorParallelRefusal(2, 8).getMessage()
                .contains("--tensor-parallel 2 is not supported with --backend gpu yet (this host has 8 visible CUDA devices)"));
        assumeFalse(CudaLibraries.isAvailable(CudaLibrary.DRIVER), "a CUDA driver loads here");
        // no driver: the device count cannot be read, so the refusal names the missing driver instead
        assertOneLineRefusal(cli("serve", "--backend", "gpu", "--tensor-parallel", "2", "--stages", "2", "--model", FIXTURE.toString(),
                "--port", "0"), "--backend cpu");
    }

    @Test
    void badBackendOptionsAreRefusedNamingTheOptionBeforeAnythingStarts() {
        assertOneLineRefusal(cli("serve", "--backend", "tpu", "--model", FIXTURE.toString(), "--port", "0"),
                "--backend must be cpu or gpu, got 'tpu'");
        assertOneLineRefusal(cli("serve", "--backend", "gpu", "--device", "-1", "--model", FIXTURE.toString(), "--port", "0"),
                "--device must be >= 0, got -1");
        assertOneLineRefusal(cli("serve", "--backend", "gpu", "--weights", "q8", "--model", FIXTURE.toString(), "--port", "0"),
                "--weights q8 is not supported with --backend gpu");
        assertOneLineRefusal(cli("serve", "--kv-memory-fraction", "1.5", "--model", FIXTURE.toString(), "--port", "0"),
                "--kv-memory-fraction must be in (0, 1], got 1.5");
        assertOneLineRefusal(cli("serve", "--kv-memory-fraction", "0", "--model", FIXTURE.toString(), "--port", "0"),
                "--kv-memory-fraction must be in (0, 1], got 0.0");
    }
}
