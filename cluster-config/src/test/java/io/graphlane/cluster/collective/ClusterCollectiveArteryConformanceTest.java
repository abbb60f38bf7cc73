package io.graphlane.cluster.collective;

import org.junit.jupiter.api.BeforeAll;

/**
 * The collective laws of {@link ClusterCollectiveConformanceTest} with {@code graphlane.cluster.collective.payload =
 * artery}: every descriptor and chunk travels as an actor message between the rank actors on Artery's large-message
 * stream, under credit-based flow control.
 */
class ClusterCollectiveArteryConformanceTest extends ClusterCollectiveConformanceTest {
    /** Hides the socket plane's cluster of the superclass. */
    @BeforeAll
    static void formCluster() throws Exception {
        nodes = CollectiveNodes.cluster(4, "artery");
    }

    @Override
    int sharedMemoryLinks(int size) {
        return 0;
    }
}
