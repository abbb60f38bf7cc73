package io.graphlane.cluster.pipeline;

import static org.junit.jupiter.api.Assertions.assertEquals;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
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
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * Hugging Face fixtures of the inference module (tiny random weights, float64 references following transformers) on
 * clusters of nodes in one JVM, one stage or shard per node: Gemma 2 (embedding scale, (1 + w) norms, GeGLU,
 * soft-capping, sliding-window layers) as two stages on two nodes, and Phi-3 with longrope (fused projections; its
 * generation recomputes the sequence once it passes the original context) as two stages on two nodes, one stage of two
 * tensor-parallel shards on two nodes, and two stages of two shards on four nodes. Every request's 8 greedy tokens
 * equal the reference's, for the 24-token prompt and the 12-token prompt, whose decode passes Phi-3's original context
 * of 16: the cache restart runs on every stage and shard, and a stage after the first receives the recomputed rows.
 */
class HfFixturesClusterTest {
    private static final Path FIXTURES = Path.of("../inference/src/test/resources/hf-fixtures");

    @ParameterizedTest(name = "{0}: {1} stage(s) x {2} shard(s)")
    @CsvSource({"gemma2, 2, 1", "phi3-longrope, 2, 1", "phi3-longrope, 1, 2", "phi3-longrope, 2, 2"})
    void greedyTokensOnOneNodePerStageAndShardEqualTheReference(String name, int stages, int shards) throws Exception {
        Path model = FIXTURES.resolve(name);
        JsonNode reference = new ObjectMapper().readTree(model.resolve("reference.json").toFile());
        int nodes = stages * shards;
        ParallelLayout layout = new ParallelLayout(nodes, stages, shards);
        ExecutorService loader = Executors.newSingleThreadExecutor();
        List<GraphlaneNode> running = new ArrayList<>();
        ClusterPipeline pipeline = null;
        try {
            List<NodeSettings> settings = FixtureNodes.localCluster(nodes);
            for (int rank = 0; rank < nodes; rank++) {
                running.add(GraphlaneNode.start(settings.get(rank), FixtureNodes.base(), layout,
                        new ModelStageHosting(model, stages, shards, loader)));
            }
            for (GraphlaneNode n : running) {
                n.hosted().toCompletableFuture().get(60, TimeUnit.SECONDS);
            }
            pipeline = ClusterPipeline.start(running.get(0).system(), ModelDirectory.open(model), layout,
                    PipelineSettings.defaults(stages).withRequestLimits(4, 4));
            ClusterPipeline started = pipeline;
            FixtureNodes.awaitUntil("the pipeline is available", () -> started.unavailableReason().isEmpty());

            List<GenerationRequest> requests = new ArrayList<>();
            List<List<Integer>> expected = new ArrayList<>();
            for (JsonNode p : reference.get("prompts")) {
                int length = p.get("ids").size();
                if (length == 12 || length == 24) {
                    requests.add(GenerationRequest.greedy(FixtureNodes.ints(p.get("ids")), 8));
                    expected.add(FixtureNodes.ints(p.get("greedy_8")));
                }
            }
            assertEquals(2, requests.size(), name + ": the reference's 12- and 24-token prompts");
            List<GenerationResult> results = pipeline.generateAll(requests, Duration.ofSeconds(60));
            for (int i = 0; i < requests.size(); i++) {
                assertEquals(expected.get(i), results.get(i).generatedIds(), name + ", " + requests.get(i).promptIds().size()
                        + "-token prompt, " + stages + " stage(s) x " + shards + " shard(s) on " + nodes + " nodes: greedy tokens");
            }
        } finally {
            FixtureNodes.stop(pipeline, running, loader);
        }
    }
}
