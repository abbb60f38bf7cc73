package io.graphlane.cluster.collective;

import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.graphlane.cluster.ClusterConfigException;
import io.graphlane.cluster.MembersUp;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.apache.pekko.actor.typed.ActorSystem;
import org.junit.jupiter.api.Test;

/** {@link MembersUp}: completes once enough members are Up, and fails at its deadline naming how many it saw. */
class MembersUpTest {

    @Test
    void aNodeAloneSeesOneMemberUpAndFailsWaitingForTwoNamingTheCount() throws Exception {
        List<ActorSystem<Void>> nodes = CollectiveNodes.cluster(1);
        try {
            MembersUp.await(nodes.get(0), 1, Duration.ofSeconds(10)).toCompletableFuture().get(15, TimeUnit.SECONDS);
            ExecutionException e = assertThrows(ExecutionException.class,
                    () -> MembersUp.await(nodes.get(0), 2, Duration.ofMillis(500)).toCompletableFuture().get(10, TimeUnit.SECONDS));
            ClusterConfigException cause = assertInstanceOf(ClusterConfigException.class, e.getCause());
            assertTrue(cause.getMessage().contains("saw 1 of 2 members Up"), cause.getMessage());
        } finally {
            CollectiveNodes.terminate(nodes);
        }
    }
}
