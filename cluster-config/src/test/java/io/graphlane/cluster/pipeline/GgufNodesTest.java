package io.graphlane.cluster.pipeline;

import static org.junit.jupiter.api.Assertions.assertEquals;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.graphlane.checkpoint.gguf.GgmlType;
import io.graphlane.checkpoint.gguf.HfGguf;
import io.graphlane.cluster.GraphlaneNode;
import io.graphlane.cluster.NodeSettings;
import io.graphlane.cluster.ParallelLayout;
import io.graphlane.inference.api.GenerationRequest;
import io.graphlane.inference.api.GenerationResult;
import io.graphlane.inference.model.ModelDirectory;
import io.graphlane.scheduler.pipeline.PipelineSettings;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * Nodes hosting a GGUF file, as {@code graphlane node --model FILE.gguf} does: the qwen2 HF fixture written as F32 GGUF
 * (llama.cpp's names, its biases, its metadata as the configuration and tokenizer) hosted as two stages on two nodes and
 * as one stage of two tensor-parallel shards on two nodes (each shard derives its rows from the file's tensors), every
 * node opening the file itself; the greedy tokens of every reference prompt equal the fixture's float64 reference.
 */
class GgufNodesTest {
    private static final Path FIXTURES = Path.of("../inference/src/test/resources/hf-fixtures");

    @TempDir
    static Path tmp;

    @ParameterizedTest(name = "{0} stage(s) x {1} shard(s)")
    @CsvSource({"2, 1", "1, 2"})
    void nodesHostingAGgufFileGenerateTheReferenceTokens(int stages, int shards) throws Exception {
        Path fixture = FIXTURES.resolve("qwen2");
        JsonNode reference = new ObjectMapper().readTree(fixture.resolve("reference.json").toFile());
        Path gguf = HfGguf.write(fixture, GgmlType.F32, tmp.resolve(stages + "x" + shards).resolve("qwen2.gguf"));
        int nodes = stages * shards;
        ParallelLayout layout = new ParallelLayout(nodes, stages, shards);
        ExecutorService loader = Executors.newSingleThreadExecutor();
        List<GraphlaneNode> running = new ArrayList<>();
        ClusterPipeline pipeline = null;
        try {
            List<NodeSettings> settings = FixtureNodes.localCluster(nodes);
            for (int rank = 0; rank < nodes; rank++) {
                running.add(GraphlaneNode.start(settings.get(rank), FixtureNodes.base(), layout,
                        new ModelStageHosting(gguf, stages, shards, loader)));
            }
            for (GraphlaneNode n : running) {
                n.hosted().toCompletableFuture().get(60, TimeUnit.SECONDS);
            }
            pipeline = ClusterPipeline.start(running.get(0).system(), ModelDirectory.open(gguf), layout,
                    PipelineSettings.defaults(stages).withRequestLimits(4, 4));
            ClusterPipeline started = pipeline;
            FixtureNodes.awaitUntil("the pipeline is available", () -> started.unavailableReason().isEmpty());

            List<GenerationRequest> requests = new ArrayList<>();
            List<List<Integer>> expected = new ArrayList<>();
            for (JsonNode p : reference.get("prompts")) {
                requests.add(GenerationRequest.greedy(FixtureNodes.ints(p.get("ids")), 8));
                expected.add(FixtureNodes.ints(p.get("greedy_8")));
            }
            List<GenerationResult> results = pipeline.generateAll(requests, Duration.ofSeconds(60));
            for (int i = 0; i < requests.size(); i++) {
                assertEquals(expected.get(i), results.get(i).generatedIds(), requests.get(i).promptIds().size()
                        + "-token prompt, " + stages + " stage(s) x " + shards + " shard(s) on " + nodes + " nodes: greedy tokens");
            }
        } finally {
            FixtureNodes.stop(pipeline, running, loader);
        }
    }
}
