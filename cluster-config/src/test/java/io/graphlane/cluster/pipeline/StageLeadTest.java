package io.graphlane.cluster.pipeline;

import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.graphlane.cluster.collective.ClusterCollectiveException;
import io.graphlane.core.graph.LaneId;
import io.graphlane.inference.llama.LlamaConfig;
import io.graphlane.inference.model.ModelDirectory;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.function.Function;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.actor.testkit.typed.javadsl.TestProbe;
import org.apache.pekko.actor.typed.receptionist.Receptionist;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The lead of a tensor-parallel stage on its own, with probes for the shard hosts and the stage host, in one local actor
 * system: each attempt names a fresh group, a failed attempt is tried again (with a new group) when no shard host
 * changes, an attempt is abandoned for a newer set of shard hosts, and nothing is handed to the stage host unless
 * every shard and the lead itself joined.
 */
class StageLeadTest {
    private static final Duration RETRY = Duration.ofMillis(300);
    private static final Duration WAIT = Duration.ofSeconds(10);
    private static ActorTestKit kit;
    private static LlamaConfig config;
    private static int stage;

    @BeforeAll
    static void start() throws Exception {
        kit = ActorTestKit.create(com.typesafe.config.ConfigFactory.parseString("pekko.actor.provider = local"));
        Path model = Path.of(StageLeadTest.class.getResource("/tiny-llama/config.json").toURI()).getParent();
        config = ModelDirectory.open(model).config();
    }

    @AfterAll
    static void stop() {
        kit.shutdownTestKit();
    }

    /** Shard 0's groups: every join the lead asks for is told to {@code asked} and answered by {@code answer}. */
    private static final class LeadGroups implements ShardGroups {
        final TestProbe<String> asked = kit.createTestProbe(String.class);
        final Function<String, CompletionStage<ShardGroup>> answer;

        LeadGroups(Function<String, CompletionStage<ShardGroup>> answer) {
            this.answer = answer;
        }

        @Override
        public int rank() {
            return 0;
        }

        @Override
        public CompletionStage<ShardGroup> form(String group) {
            asked.getRef().tell(group);
            return answer.apply(group);
        }

        @Override
        public CompletionStage<Void> retire(ShardGroup shardGroup) {
            return CompletableFuture.completedFuture(null);
        }
    }

    /** A stage index of its own per test, so the receptionist keys of one test do not reach another's lead. */
    private static StageLead.StageShape shape() {
        return new StageLead.StageShape(++stage, 2, config, false, new LaneId("stage-" + stage), new LaneId("stage-" + stage + "-collective"));
    }

    private static TestProbe<ShardHost.Command> shardHost(StageLead.StageShape shape) {
        TestProbe<ShardHost.Command> probe = kit.createTestProbe(ShardHost.Command.class);
        kit.system().receptionist().tell(Receptionist.register(StageKeys.shardHost(shape.stage(), 1), probe.getRef()));
        return probe;
    }

    @Test
    void aFailedJoinOfTheLeadIsTriedAgainInAFreshGroupWithoutAnyMembershipChange() {
        StageLead.StageShape shape = shape();
        TestProbe<ShardHost.Command> shard = shardHost(shape);
        TestProbe<StageHost.Command> host = kit.createTestProbe(StageHost.Command.class);
        LeadGroups lead = new LeadGroups(group -> CompletableFuture.failedFuture(
                new ClusterCollectiveException("collective group " + group + ", rank 0: ranks [1] did not join in time")));
        kit.spawn(StageLead.create(shape, lead, host.getRef(), "42", RETRY));

        ShardHost.Reform first = shard.expectMessageClass(ShardHost.Reform.class, WAIT);
        ShardHost.Reform second = shard.expectMessageClass(ShardHost.Reform.class, WAIT);
        assertTrue(first.group().startsWith("tp-stage-" + shape.stage() + "-42-"), first.group());
        assertTrue(second.group().startsWith("tp-stage-" + shape.stage() + "-42-"), second.group());
        assertNotEquals(first.group(), second.group(), "a retry joins a fresh group");
        lead.asked.expectMessage(WAIT, first.group());
        lead.asked.expectMessage(WAIT, second.group());
        host.expectNoMessage(RETRY.multipliedBy(2));
    }

    @Test
    void aShardThatCannotJoinFailsTheAttemptAndNothingIsHandedToTheStageHost() {
        StageLead.StageShape shape = shape();
        TestProbe<ShardHost.Command> shard = shardHost(shape);
        TestProbe<StageHost.Command> host = kit.createTestProbe(StageHost.Command.class);
        LeadGroups lead = new LeadGroups(group -> new CompletableFuture<>());
        kit.spawn(StageLead.create(shape, lead, host.getRef(), "7", RETRY));

        ShardHost.Reform first = shard.expectMessageClass(ShardHost.Reform.class, WAIT);
        first.replyTo().tell(new ShardHost.ReformFailed(first.group(), 1, "shard 1: the join timed out"));
        ShardHost.Reform second = shard.expectMessageClass(ShardHost.Reform.class, WAIT);
        assertNotEquals(first.group(), second.group());
        // The shard joined the second group, but the lead has not: the stage is not formed.
        second.replyTo().tell(new ShardHost.Reformed(second.group(), 1));
        host.expectNoMessage(RETRY.multipliedBy(3));
    }

    @Test
    void aNewHostForAShardSupersedesAnAttemptInFlight() {
        StageLead.StageShape shape = shape();
        TestProbe<ShardHost.Command> before = shardHost(shape);
        TestProbe<StageHost.Command> host = kit.createTestProbe(StageHost.Command.class);
        LeadGroups lead = new LeadGroups(group -> new CompletableFuture<>());
        kit.spawn(StageLead.create(shape, lead, host.getRef(), "9", Duration.ofMinutes(5)));

        ShardHost.Reform first = before.expectMessageClass(ShardHost.Reform.class, WAIT);
        kit.system().receptionist().tell(Receptionist.deregister(StageKeys.shardHost(shape.stage(), 1), before.getRef()));
        TestProbe<ShardHost.Command> replacement = shardHost(shape);
        ShardHost.Reform second = replacement.expectMessageClass(ShardHost.Reform.class, WAIT);
        assertNotEquals(first.group(), second.group());
        lead.asked.expectMessage(WAIT, first.group());
        lead.asked.expectMessage(WAIT, second.group());
        // A late answer for the abandoned group changes nothing.
        first.replyTo().tell(new ShardHost.Reformed(first.group(), 1));
        host.expectNoMessage(Duration.ofMillis(500));
        before.expectNoMessage(Duration.ZERO);
    }
}
