package io.graphlane.cluster.pipeline;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.graphlane.actors.lane.LaneGroup;
import io.graphlane.backend.cpu.CpuBackend;
import io.graphlane.backend.cpu.CpuCompletion;
import io.graphlane.backend.cpu.CpuExecutor;
import io.graphlane.backend.cpu.CpuWork;
import io.graphlane.backend.cpu.nn.CpuTensor;
import io.graphlane.cluster.NodeReadiness;
import io.graphlane.core.graph.LaneId;
import io.graphlane.core.nn.NeuralOps;
import io.graphlane.inference.llama.LlamaConfig;
import io.graphlane.inference.llama.StageForward;
import io.graphlane.inference.llama.StageInput;
import io.graphlane.inference.llama.StageOutput;
import io.graphlane.inference.model.ModelDirectory;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.actor.testkit.typed.javadsl.TestProbe;
import org.apache.pekko.actor.typed.ActorRef;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** A stage host that fails on its own stops with the failure logged, and the node reports itself not alive, naming it. */
class HostSupervisionTest {
    private final ActorTestKit kit = ActorTestKit.create();
    private final CpuBackend backend = new CpuBackend();

    @AfterEach
    void stop() {
        kit.shutdownTestKit();
        backend.close();
    }

    /** A stage whose forward is never reached: asking for its ops throws, on the host's own thread. */
    private record Broken(LlamaConfig config) implements StageForward<CpuTensor> {
        @Override
        public StageOutput<CpuTensor> forward(StageInput<CpuTensor> input) {
            throw new AssertionError("not reached");
        }

        @Override
        public NeuralOps<CpuTensor> ops() {
            throw new IllegalStateException("ops of the broken stage");
        }

        @Override
        public boolean endRequest(long requestId) {
            return false;
        }

        @Override
        public boolean rewind(long requestId, int position) {
            return false;
        }

        @Override
        public long kvCachePositions() {
            return 0;
        }

        @Override
        public void close() {
        }
    }

    @Test
    void aStageHostThatFailsOnItsOwnTurnsTheNodeNotAliveNamingIt() throws Exception {
        Path model = Path.of(HostSupervisionTest.class.getResource("/tiny-llama/config.json").toURI()).getParent();
        LlamaConfig config = ModelDirectory.open(model).config();
        LaneGroup<CpuExecutor, CpuCompletion, CpuWork> lanes = LaneGroup.builder(kit.system(), backend).lanes("stage-0").spawn();
        StageHost.HostedStage hosted = new StageHost.HostedStage(new Broken(config), false, config, new LaneId("stage-0"), List.of(), "");
        StepCounters counters = new StepCounters();
        ActorRef<StageHost.Command> host = HostSupervision.spawn(kit.system(), StageHost.create(Map.of(0, hosted), Map.of(),
                lanes.registry(), "node-a", counters), "stage-host", "the stage host of stage 0 on node-a");
        NodeReadiness readiness = NodeReadiness.get(kit.system());
        TestProbe<StageReply> sender = kit.createTestProbe();

        // A malformed step is the peer's fault: refused, and the host keeps running.
        host.tell(new StageHost.Step(1, 0, new long[] {7}, new int[] {0}, new int[] {2}, new int[] {5}, null, new long[0],
                new long[0], new int[0], sender.getRef()));
        StageReply.StepFailed refused = sender.expectMessageClass(StageReply.StepFailed.class);
        assertTrue(refused.failure().cause().getMessage().contains("tokens: expected 2 token ids"), refused.failure().cause().getMessage());
        assertTrue(readiness.isAlive(), "a refused step leaves the node alive");

        host.tell(new StageHost.Step(2, 0, new long[] {7}, new int[] {0}, new int[] {1}, new int[] {5}, null, new long[0],
                new long[0], new int[0], sender.getRef()));
        TestProbe<Object> watcher = kit.createTestProbe();
        watcher.expectTerminated(host, Duration.ofSeconds(10));
        FixtureNodes.awaitUntil("the node reports the failure", () -> !readiness.isAlive());
        assertFalse(readiness.isReady());
        String why = readiness.failure().orElseThrow().getMessage();
        assertTrue(why.contains("the stage host of stage 0 on node-a"), why);
        assertEquals(1, counters.steps(), "the well formed step reached the host");
        lanes.stop().toCompletableFuture().get(30, java.util.concurrent.TimeUnit.SECONDS);
    }
}
