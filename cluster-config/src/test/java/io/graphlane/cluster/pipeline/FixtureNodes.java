package io.graphlane.cluster.pipeline;

import static org.junit.jupiter.api.Assertions.assertEquals;

import com.fasterxml.jackson.databind.JsonNode;
import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import io.graphlane.cluster.ClusterProfile;
import io.graphlane.cluster.GraphlaneNode;
import io.graphlane.cluster.NodeSettings;
import io.graphlane.cluster.TestNodes;
import io.graphlane.cluster.TestPorts;
import io.graphlane.inference.api.GenerationRequest;
import io.graphlane.inference.api.GenerationResult;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.OptionalInt;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;

/** Helpers for tests that host the tiny-llama fixture on several nodes in one JVM. */
final class FixtureNodes {
    private FixtureNodes() {
    }

    /** The base configuration of in-JVM nodes: several cluster MBeans in one JVM, no shutdown hooks. */
    static Config base() {
        return ConfigFactory.parseString("""
                pekko.cluster.jmx.multi-mbeans-in-same-jvm = on
                pekko.loglevel = WARNING
                pekko.coordinated-shutdown.run-by-jvm-shutdown-hook = off
                pekko.coordinated-shutdown.run-by-actor-system-terminate = off
                """).withFallback(ConfigFactory.load());
    }

    /** Local-profile settings of {@code nodes} members with given ranks, on ports that were free a moment ago ({@link TestPorts}). */
    static List<NodeSettings> localCluster(int nodes) throws Exception {
        List<Integer> ports = TestPorts.reserve(2 * nodes);
        List<Integer> management = ports.subList(nodes, 2 * nodes);
        List<NodeSettings> all = new ArrayList<>();
        for (int rank = 0; rank < nodes; rank++) {
            all.add(new NodeSettings(ClusterProfile.LOCAL, nodes, OptionalInt.of(rank), "127.0.0.1", ports.get(rank),
                    management.get(rank), management, List.of(), false));
        }
        return all;
    }

    /** Generates 16 greedy tokens for every prompt of the fixture's {@code reference} and asserts they are its tokens. */
    static void assertGreedyTokens(ClusterPipeline pipeline, JsonNode reference, Duration within) throws Exception {
        List<GenerationRequest> requests = new ArrayList<>();
        List<List<Integer>> expected = new ArrayList<>();
        for (JsonNode p : reference.get("prompts")) {
            requests.add(GenerationRequest.greedy(ints(p.get("ids")), 16));
            expected.add(ints(p.get("greedy_16")));
        }
        List<GenerationResult> results = pipeline.generateAll(requests, within);
        for (int i = 0; i < requests.size(); i++) {
            assertEquals(expected.get(i), results.get(i).generatedIds(), "greedy tokens of prompt " + requests.get(i).promptIds());
        }
    }

    /** Closes {@code pipeline} (if started), shuts every node down and stops the loader. */
    static void stop(ClusterPipeline pipeline, List<GraphlaneNode> nodes, ExecutorService loader) throws Exception {
        if (pipeline != null) {
            pipeline.close();
        }
        for (GraphlaneNode n : nodes) {
            n.shutdown().toCompletableFuture().get(30, TimeUnit.SECONDS);
        }
        loader.shutdown();
    }

    /** Waits until {@code condition} holds, checking every 100 ms, or fails naming {@code what} after a minute. */
    /**
     * A step of stage {@code stage} (after stage 0) over one segment of {@code requestId}: the rows of {@code activation}
     * from {@code start}, forgetting {@code forget} before it; as a peer would send it.
     */
    static StageHost.Step hiddenStep(long stepId, int stage, long requestId, int start, io.graphlane.actors.wire.WireTensor activation,
                                     long[] forget, org.apache.pekko.actor.typed.ActorRef<StageReply> replyTo) {
        long[] dims = activation.shape().dims();
        int rows = dims.length == 2 ? (int) dims[0] : 1;
        return new StageHost.Step(stepId, stage, new long[] {requestId}, new int[] {start}, new int[] {rows}, new int[0], activation,
                forget, new long[0], new int[0], replyTo);
    }

    static void awaitUntil(String what, BooleanSupplier condition) throws InterruptedException {
        TestNodes.awaitCondition(what, Duration.ofSeconds(60), condition);
    }

    static List<Integer> ints(JsonNode array) {
        List<Integer> out = new ArrayList<>();
        array.forEach(n -> out.add(n.asInt()));
        return out;
    }
}
