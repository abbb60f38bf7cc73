package io.graphlane.cluster.collective;

import com.typesafe.config.ConfigFactory;
import org.junit.jupiter.api.BeforeAll;

/**
 * The collective laws of {@link ClusterCollectiveConformanceTest} with {@code graphlane.cluster.collective.shared-memory
 * = off}: every frame's bytes travel on the direct TCP socket between its two ranks, as between ranks on different
 * hosts.
 */
class ClusterCollectiveSocketConformanceTest extends ClusterCollectiveConformanceTest {
    /** Hides the shared-memory cluster of the superclass. */
    @BeforeAll
    static void formCluster() throws Exception {
        nodes = CollectiveNodes.cluster(4, "socket", ConfigFactory.parseString("graphlane.cluster.collective.shared-memory = off"));
    }

    @Override
    int sharedMemoryLinks(int size) {
        return 0;
    }
}
