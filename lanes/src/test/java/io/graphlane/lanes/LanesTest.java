package io.graphlane.lanes;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.graphlane.core.graph.GraphValidationException;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

class LanesTest {

    @Test
    void consumersReceiveTheirProducersValues() throws Exception {
        try (Lanes lanes = Lanes.cpu("load", "compute")) {
            Results out = lanes.flow()
                    .node("a", "load", in -> 20)
                    .node("b", "compute", in -> 22)
                    .node("sum", "compute", in -> in.<Integer>get("a") + in.<Integer>get("b"), "a", "b")
                    .node("text", "load", in -> "sum=" + in.get("sum", Integer.class), "sum")
                    .run();
            assertEquals(42, (int) out.get("sum"));
            assertEquals("sum=42", out.get("text"));
            assertEquals(4, out.graphResult().count(io.graphlane.scheduler.graph.WorkState.COMMITTED));
        }
    }

    @Test
    void aFailureNamesTheUsersNodesAndLanes() throws Exception {
        try (Lanes lanes = Lanes.cpu("load", "compute")) {
            LaneFlowException e = assertThrows(LaneFlowException.class, () -> lanes.flow()
                    .node("read", "load", in -> {
                        throw new IllegalStateException("disk gone");
                    })
                    .node("matmul", "compute", in -> 1, "read")
                    .node("write", "load", in -> 2, "matmul")
                    .node("other", "compute", in -> 3)
                    .run());
            assertEquals("lane graph failed: node 'read' on lane 'load' failed: java.lang.IllegalStateException: disk gone; "
                    + "node 'matmul' on lane 'compute' did not run because node 'read' on lane 'load' failed; "
                    + "node 'write' on lane 'load' did not run because node 'read' on lane 'load' failed", e.getMessage());
            NodeFailedException root = assertInstanceOf(NodeFailedException.class, e.getCause());
            assertEquals("read", root.node());
            assertEquals("load", root.lane());
            assertEquals("disk gone", root.getCause().getMessage());
            assertEquals(List.of("read", "matmul", "write"), List.copyOf(e.reasons().keySet()), "the independent node committed");
        }
    }

    @Test
    void readingANodeThatIsNotAProducerFailsNamingIt() throws Exception {
        try (Lanes lanes = Lanes.cpu(2)) {
            LaneFlowException e = assertThrows(LaneFlowException.class, () -> lanes.flow()
                    .node("a", "lane-0", in -> 1)
                    .node("b", "lane-1", in -> in.get("a"))
                    .run());
            assertTrue(e.getMessage().contains("node 'b' on lane 'lane-1' failed: java.lang.IllegalArgumentException: node 'b' on lane "
                    + "'lane-1' reads 'a', which it does not run after (its producers: none)"), e.getMessage());
        }
    }

    @Test
    void anUnknownLaneIsRefusedBeforeAnythingRuns() {
        try (Lanes lanes = Lanes.cpu("load", "compute")) {
            AtomicBoolean ran = new AtomicBoolean();
            GraphValidationException e = assertThrows(GraphValidationException.class, () -> lanes.flow()
                    .node("a", "load", in -> {
                        ran.set(true);
                        return null;
                    })
                    .node("b", "gpu", in -> 1, "a")
                    .start());
            assertTrue(e.getMessage().contains("node 'b' is placed on unknown lane 'gpu' (lanes: load, compute)"), e.getMessage());
            assertFalse(ran.get());
        }
    }

    @Test
    void aRetainedValueLivesUntilItsNodeCompletedAndIsReleasedOnce() throws Exception {
        try (Lanes lanes = Lanes.cpu("load", "compute")) {
            Buffer used = new Buffer();
            Buffer neverRun = new Buffer();
            AtomicBoolean closedWhileRunning = new AtomicBoolean(true);
            assertThrows(LaneFlowException.class, () -> lanes.flow()
                    .node("fill", "load", in -> {
                        closedWhileRunning.set(used.closes.get() > 0);
                        return null;
                    })
                    .retain("fill", used)
                    .node("fail", "compute", in -> {
                        throw new IllegalStateException("no");
                    }, "fill")
                    .node("after", "load", in -> null, "fail")
                    .retain("after", neverRun)
                    .run());
            assertTrue(used.closed.await(30, TimeUnit.SECONDS));
            assertTrue(neverRun.closed.await(30, TimeUnit.SECONDS));
            assertFalse(closedWhileRunning.get(), "the retained buffer was open while its node ran");
            assertEquals(1, used.closes.get());
            assertEquals(1, neverRun.closes.get());
        }
    }

    @Test
    void retainingForAnUnknownNodeIsRefused() {
        try (Lanes lanes = Lanes.cpu(1)) {
            GraphValidationException e = assertThrows(GraphValidationException.class,
                    () -> lanes.flow().node("a", "lane-0", in -> 1).retain("b", new Buffer()).start());
            assertTrue(e.getMessage().contains("retain names node 'b', which is not in the graph"), e.getMessage());
        }
    }

    /**
     * A producer's plain writes are visible to its consumer on another lane with no synchronization of the user's:
     * happens-before through the completion handle. The array and the field are plain; a lost edge would show as zeros
     * or a stale length.
     */
    @Test
    void aProducersPlainWritesAreVisibleToItsConsumerOnAnotherLane() throws Exception {
        try (Lanes lanes = Lanes.cpu("producer", "consumer", "other")) {
            for (int round = 0; round < 200; round++) {
                Plain shared = new Plain();
                int n = 4096 + round;
                Results out = lanes.flow()
                        .node("fill", "producer", in -> {
                            shared.values = new int[n];
                            for (int i = 0; i < n; i++) {
                                shared.values[i] = i * 7 + 1;
                            }
                            shared.count = n;
                            return null;
                        })
                        .node("relay", "other", in -> null, "fill")
                        .node("check", "consumer", in -> {
                            int bad = 0;
                            for (int i = 0; i < shared.count; i++) {
                                if (shared.values[i] != i * 7 + 1) {
                                    bad++;
                                }
                            }
                            return shared.count == n ? bad : -1;
                        }, "relay")
                        .run();
                assertEquals(0, (int) out.get("check"), "round " + round + ": the consumer saw every write of the producer");
            }
        }
    }

    @Test
    void closeTerminatesTheActorSystemItCreated() throws Exception {
        Lanes lanes = Lanes.cpu(3);
        assertEquals(List.of("lane-0", "lane-1", "lane-2"), lanes.laneNames());
        lanes.close();
        assertTrue(lanes.system().getWhenTerminated().toCompletableFuture().isDone());
        assertThrows(IllegalStateException.class, lanes::flow);
        lanes.close(); // idempotent
    }

    @Test
    void aFlowRunsOnce() throws Exception {
        try (Lanes lanes = Lanes.cpu(1)) {
            LaneFlow flow = lanes.flow().node("a", "lane-0", in -> 1);
            flow.run();
            IllegalStateException e = assertThrows(IllegalStateException.class, flow::run);
            assertTrue(e.getMessage().contains("has started already"), e.getMessage());
        }
    }

    private static final class Plain {
        int[] values;
        int count;
    }

    private static final class Buffer implements AutoCloseable {
        final AtomicInteger closes = new AtomicInteger();
        final CountDownLatch closed = new CountDownLatch(1);

        @Override
        public void close() {
            closes.incrementAndGet();
            closed.countDown();
        }
    }
}
