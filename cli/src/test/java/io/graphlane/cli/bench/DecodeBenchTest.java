package io.graphlane.cli.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.graphlane.backend.cpu.nn.CpuNeuralBackend;
import io.graphlane.cli.GraphlaneCli;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;

class DecodeBenchTest {
    private static final Path FIXTURE = Path.of("..", "checkpoint", "src", "test", "resources", "tiny-llama");

    @Test
    void aCpuRunReportsTheWeightStreamingBoundMeasuredInTheSameRunAndTheRatioReached() throws Exception {
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        CommandLine cli = GraphlaneCli.commandLine();
        cli.setOut(new PrintWriter(out));
        cli.setErr(new PrintWriter(err));
        int status = cli.execute("bench", "decode", "--backends", "cpu", "--model", FIXTURE.toString(), "--stages", "1",
                "--requests", "2", "--new-tokens", "4", "--json");
        assertEquals(0, status, err.toString());
        JsonNode result = new ObjectMapper().readTree(out.toString()).get("results").get(0);
        // tiny-llama: 4 layers of hidden 64 (q 64, k and v 32, o, MLP 172, two norms), final norm, head 256 x 64, one embedding row.
        long perLayer = 64L * 64 + 2 * 64 * 32 + 64 * 64 + 3 * 64 * 172 + 2 * 64;
        assertEquals((perLayer * 4 + 64 + 256 * 64 + 64) * Float.BYTES, result.get("weight_bytes_per_token").asLong());
        double bandwidth = result.get("bandwidth_gb_per_s").asDouble();
        double limit = result.get("limit_tokens_per_s").asDouble();
        assertTrue(bandwidth > 0 && limit > 0, result.toString());
        assertEquals(result.get("decode_tokens_per_s").asDouble() / limit, result.get("limit_ratio").asDouble(), 1e-9);
        int cores = Runtime.getRuntime().availableProcessors();
        assertEquals(CpuNeuralBackend.blasThreadsFor(1, cores, CpuNeuralBackend.blasThreadsOverride()), result.get("blas_threads").asInt(),
                "the probe streams with every thread the pipeline's lanes use together");
        assertEquals(CpuNeuralBackend.blasThreadsFor(1, cores, CpuNeuralBackend.blasThreadsOverride()), CpuNeuralBackend.blasThreads(),
                "one stage: OpenBLAS keeps every core after the probe");
    }
}
