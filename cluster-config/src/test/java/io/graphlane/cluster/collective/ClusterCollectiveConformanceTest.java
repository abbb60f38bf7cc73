package io.graphlane.cluster.collective;

import io.graphlane.backend.cpu.CpuCompletion;
import io.graphlane.backend.cpu.CpuExecutor;
import io.graphlane.backend.cpu.CpuWork;
import io.graphlane.backend.cpu.collective.CollectiveMessage;
import io.graphlane.backend.cpu.collective.CollectiveSettings;
import io.graphlane.backend.cpu.collective.CollectiveTransport;
import io.graphlane.backend.cpu.collective.CpuCollectiveGroup;
import io.graphlane.backend.cpu.collective.CpuCollectiveLaws;
import io.graphlane.core.backend.SubmissionBackend;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.pekko.actor.typed.ActorSystem;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;

/**
 * The collective laws over the cluster transport with the socket payload plane: member i of every group is rank i on
 * node i of four actor systems joined into one cluster over Artery on loopback, and every descriptor and chunk is framed
 * by {@link CollectiveWireSerializer} and crosses between its two ranks through the shared-memory ring of their pair
 * (the default for ranks on one host; {@link ClusterCollectiveSocketConformanceTest}: the same laws with the bytes on
 * the TCP socket itself, {@link ClusterCollectiveArteryConformanceTest}: with the payload over Artery). The lanes all live in this JVM (the suite drives them), but each
 * member sends and receives only through its own node's {@link ClusterCollectiveTransport}. Chunks are 1000 floats, so
 * the suite's larger shapes stream as many uneven chunks, past the credit window.
 */
class ClusterCollectiveConformanceTest extends CpuCollectiveLaws {
    private static final AtomicInteger GROUPS = new AtomicInteger();
    static List<ActorSystem<Void>> nodes;
    private final List<ClusterCollectiveTransport> joined = new ArrayList<>();

    /** Hidden by {@link ClusterCollectiveArteryConformanceTest}'s, which forms the cluster with the other plane. */
    @BeforeAll
    static void formCluster() throws Exception {
        nodes = CollectiveNodes.cluster(4, "socket");
    }

    /** The links of each rank of a {@code size}-rank group that run through shared memory: all of them here. */
    int sharedMemoryLinks(int size) {
        return size - 1;
    }

    @AfterAll
    static void stopCluster() throws Exception {
        CollectiveNodes.terminate(nodes);
    }

    @AfterEach
    void closeGroups() throws Exception {
        CollectiveNodes.closeAll(joined);
        joined.clear();
    }

    /** Routes each member's sends and polls to its own node's transport, so one group object can span the nodes. */
    private record ByRank(List<ClusterCollectiveTransport> ranks) implements CollectiveTransport {
        @Override
        public int size() {
            return ranks.size();
        }

        @Override
        public void send(int from, int to, CollectiveMessage message) {
            ranks.get(from).send(from, to, message);
        }

        @Override
        public Envelope poll(int to, long timeoutNanos) throws InterruptedException {
            return ranks.get(to).poll(to, timeoutNanos);
        }

        @Override
        public void consumed(int to, int from, CollectiveMessage.Chunk chunk) {
            ranks.get(to).consumed(to, from, chunk);
        }

        @Override
        public boolean awaitSent(int from, long timeoutNanos) throws InterruptedException {
            return ranks.get(from).awaitSent(from, timeoutNanos);
        }

        @Override
        public void withdrawSent(int from) {
            ranks.get(from).withdrawSent(from);
        }
    }

    @Override
    protected CpuCollectiveGroup group(SubmissionBackend<CpuExecutor, CpuCompletion, CpuWork> backend, List<CpuExecutor> members,
                                       Duration memberTimeout) {
        String name = "conformance-" + GROUPS.incrementAndGet();
        CollectiveSettings settings = new CollectiveSettings(memberTimeout, 1000);
        try {
            List<ClusterCollectiveTransport> ranks = CollectiveNodes.join(nodes, name, members.size(), settings);
            joined.addAll(ranks);
            for (ClusterCollectiveTransport rank : ranks) {
                int expected = sharedMemoryLinks(ranks.size());
                if (rank.sharedMemoryPeers().size() != expected) {
                    throw new AssertionError("rank " + rank.localRank() + " of " + name + " moves its payload through shared memory with ranks "
                            + rank.sharedMemoryPeers() + "; expected " + expected + " such links");
                }
            }
            return CpuCollectiveGroup.over(name, members, settings, new ByRank(ranks));
        } catch (Exception e) {
            throw new IllegalStateException("group " + name + " did not form", e);
        }
    }
}
