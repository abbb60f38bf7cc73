package io.graphlane.cluster;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.graphlane.actors.lane.LaneProtocol;
import io.graphlane.backend.cpu.CpuBackend;
import io.graphlane.cluster.pipeline.StageKeys;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.pekko.actor.testkit.typed.javadsl.TestProbe;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.receptionist.Receptionist;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** Three nodes in one JVM form one cluster through Cluster Bootstrap with config discovery over their management ports. */
class ClusterFormationTest {
    private static final List<GraphlaneNode> NODES = new ArrayList<>();
    private static final List<NodeIdentity> IDENTITIES = new ArrayList<>();

    @BeforeAll
    static void formCluster() throws Exception {
        for (NodeSettings s : TestNodes.localCluster(3)) {
            NODES.add(GraphlaneNode.start(s, TestNodes.base(), 3, new LaneStageHosting<>(new CpuBackend())));
        }
        for (GraphlaneNode n : NODES) {
            IDENTITIES.add(n.hosted().toCompletableFuture().get(60, TimeUnit.SECONDS));
        }
    }

    @AfterAll
    static void stopCluster() throws Exception {
        for (GraphlaneNode n : NODES) {
            n.shutdown().toCompletableFuture().get(30, TimeUnit.SECONDS);
        }
    }

    @Test
    void derivedRanksAreDistinctAndFollowAddressOrder() {
        List<Integer> byArteryPort = new ArrayList<>();
        List<Integer> order = new ArrayList<>(List.of(0, 1, 2));
        order.sort(Comparator.comparingInt(i -> NODES.get(i).settings().arteryPort()));
        for (int i : order) {
            byArteryPort.add(IDENTITIES.get(i).rank());
        }
        assertEquals(List.of(0, 1, 2), byArteryPort, "ranks in the order of the members' ports");
        for (NodeIdentity id : IDENTITIES) {
            assertEquals(List.of(id.rank()), id.stages(), "stage i on rank i mod 3");
        }
    }

    @Test
    void managementListsThreeMembersUpAndEveryNodeIsReady() throws Exception {
        int port = NODES.get(0).settings().managementPort();
        HttpResponse<String> members = TestNodes.get(port, "/cluster/members");
        assertEquals(200, members.statusCode(), members.body());
        Matcher up = Pattern.compile("\"status\"\\s*:\\s*\"Up\"").matcher(members.body());
        int count = 0;
        while (up.find()) {
            count++;
        }
        assertEquals(3, count, members.body());
        for (GraphlaneNode n : NODES) {
            TestNodes.awaitCondition("readiness of " + n.settings().managementPort(), Duration.ofSeconds(20),
                    () -> TestNodes.get(n.settings().managementPort(), "/ready").statusCode() == 200);
            assertEquals(200, TestNodes.get(n.settings().managementPort(), "/alive").statusCode());
        }
    }

    @Test
    void everyStageLaneIsFoundThroughTheReceptionistOnTheNodeOfItsRank() throws Exception {
        GraphlaneNode asking = NODES.get(0);
        TestProbe<Receptionist.Listing> probe = TestProbe.create(asking.system());
        for (int stage = 0; stage < 3; stage++) {
            int owner = stage % 3;
            String ownerAddress = IDENTITIES.stream().filter(id -> id.rank() == owner).findFirst().orElseThrow().address();
            int s = stage;
            TestNodes.awaitCondition("stage " + stage + " in the receptionist", Duration.ofSeconds(20), () -> {
                asking.system().receptionist().tell(Receptionist.find(StageKeys.lane(s), probe.getRef()));
                Set<ActorRef<LaneProtocol.Command>> refs = probe.receiveMessage().getServiceInstances(StageKeys.lane(s));
                return refs.size() == 1 && addressOf(refs.iterator().next(), asking).equals(ownerAddress);
            });
        }
        assertTrue(NODES.stream().allMatch(n -> n.readiness().isAlive()));
    }

    private static String addressOf(ActorRef<?> ref, GraphlaneNode local) {
        var address = ref.path().address();
        return address.hasLocalScope() ? local.system().address().toString() : address.toString();
    }
}
