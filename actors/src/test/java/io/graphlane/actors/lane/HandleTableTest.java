package io.graphlane.actors.lane;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.graphlane.actors.lane.LaneProtocol.Resolved;
import io.graphlane.actors.lane.LaneProtocol.Subscribe;
import io.graphlane.core.completion.Outcome;
import io.graphlane.core.graph.CompletionHandle;
import io.graphlane.core.graph.LaneId;
import java.time.Duration;
import java.util.List;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.actor.testkit.typed.javadsl.TestProbe;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;

class HandleTableTest {
    private static final ActorTestKit KIT = ActorTestKit.create();
    private static final LaneId LANE = LaneId.of("a");

    @AfterAll
    static void shutdown() {
        KIT.shutdownTestKit();
    }

    /** A produced handle whose end the test decides. */
    private static final class Work extends HandleTable.Produced {
        final CompletionHandle handle;
        final long scope;
        final int consumers;
        boolean ended;

        Work(long sequence, long scope, int consumers) {
            this.handle = CompletionHandle.local(LANE, sequence);
            this.scope = scope;
            this.consumers = consumers;
        }

        @Override
        CompletionHandle handle() {
            return handle;
        }

        @Override
        long scope() {
            return scope;
        }

        @Override
        int expectedConsumers() {
            return consumers;
        }

        @Override
        boolean hasEnded() {
            return ended;
        }
    }

    @Test
    void aHandleIsKeptUntilItHasEndedAndEveryExpectedConsumerHasAsked() {
        HandleTable<Work> table = new HandleTable<>();
        Work w = new Work(0, 1, 2);
        assertNull(table.accept(w));
        table.served(w);
        table.served(w);
        assertSame(w, table.get(w.handle), "forgotten before its work ended");
        w.ended = true;
        table.forgetIfDone(w);
        assertFalse(table.contains(w.handle));
        assertEquals(0, table.size());

        Work twoConsumers = new Work(1, 1, 2);
        twoConsumers.ended = true;
        table.accept(twoConsumers);
        table.served(twoConsumers);
        assertTrue(table.contains(twoConsumers.handle), "forgotten before its second consumer asked");
        table.served(twoConsumers);
        assertFalse(table.contains(twoConsumers.handle));

        Work noConsumer = new Work(2, 1, 0);
        table.accept(noConsumer);
        noConsumer.ended = true;
        table.forgetIfDone(noConsumer);
        assertFalse(table.contains(noConsumer.handle));
    }

    @Test
    void aHandleIsHeldOnce() {
        HandleTable<Work> table = new HandleTable<>();
        table.accept(new Work(0, 1, 0));
        IllegalStateException twice = assertThrows(IllegalStateException.class, () -> table.accept(new Work(0, 1, 0)));
        assertTrue(twice.getMessage().contains(CompletionHandle.local(LANE, 0).toString()), twice.getMessage());
    }

    @Test
    void whoWaitedForAHandleBeforeItArrivedIsHandedOverWhenItDoesAndNoLongerCounted() {
        HandleTable<Work> table = new HandleTable<>();
        TestProbe<Resolved> probe = KIT.createTestProbe();
        Work producer = new Work(5, 1, 2);
        Work consumer = new Work(6, 1, 0);
        Subscribe s = new Subscribe(producer.handle, 1, probe.ref());
        table.subscribeEarly(s);
        table.waitLocally(producer.handle, consumer);
        assertEquals(1, table.pendingSubscriptions());
        assertTrue(table.awaited(producer.handle));

        HandleTable.Early<Work> early = table.accept(producer);
        assertEquals(List.of(s), early.subscribers());
        assertEquals(List.of(consumer), early.localWaiters());
        assertEquals(0, table.pendingSubscriptions());
        assertFalse(table.awaited(producer.handle));
        assertNull(table.accept(new Work(7, 1, 0)), "nobody waited for this one");
    }

    @Test
    void forgettingARequestDropsItsEndedHandlesOnly() {
        HandleTable<Work> table = new HandleTable<>();
        Work endedOfRequest = new Work(0, 7, 3);
        Work runningOfRequest = new Work(1, 7, 3);
        Work endedOfAnother = new Work(2, 8, 3);
        endedOfRequest.ended = true;
        endedOfAnother.ended = true;
        table.accept(endedOfRequest);
        table.accept(runningOfRequest);
        table.accept(endedOfAnother);
        table.forgetScope(7);
        assertFalse(table.contains(endedOfRequest.handle));
        assertTrue(table.contains(runningOfRequest.handle));
        assertTrue(table.contains(endedOfAnother.handle));
        assertEquals(2, table.size());
    }

    @Test
    void answeringEarlySubscriptionsTellsTheSelectedOnesTheHandleEndedAndStopsCountingThem() {
        HandleTable<Work> table = new HandleTable<>();
        TestProbe<Resolved> probe = KIT.createTestProbe();
        CompletionHandle ofOne = CompletionHandle.local(LANE, 10);
        CompletionHandle ofTwo = CompletionHandle.local(LANE, 11);
        table.subscribeEarly(new Subscribe(ofOne, 1, probe.ref()));
        table.subscribeEarly(new Subscribe(ofTwo, 2, probe.ref()));
        IllegalStateException why = new IllegalStateException("request 1 forgotten");
        table.answerEarly(sub -> sub.scope() == 1, h -> Outcome.failure(why));

        Resolved r = probe.receiveMessage(Duration.ofSeconds(5));
        assertEquals(ofOne, r.handle());
        LaneProtocol.Ended ended = assertInstanceOf(LaneProtocol.Ended.class, r.resolution());
        assertSame(why, assertInstanceOf(Outcome.Failed.class, ended.outcome()).cause());
        probe.expectNoMessage(Duration.ofMillis(50));
        assertEquals(1, table.pendingSubscriptions());

        table.pruneEarly(w -> false);
        assertFalse(table.awaited(ofOne), "an answered handle nobody waits for any more is still held");
        assertTrue(table.awaited(ofTwo));
    }

    @Test
    void pruningDropsEndedLocalWaiters() {
        HandleTable<Work> table = new HandleTable<>();
        CompletionHandle notArrived = CompletionHandle.local(LANE, 20);
        Work gone = new Work(21, 1, 0);
        Work waiting = new Work(22, 1, 0);
        table.waitLocally(notArrived, gone);
        table.waitLocally(notArrived, waiting);
        gone.ended = true;
        table.pruneEarly(Work::hasEnded);
        assertTrue(table.awaited(notArrived));
        waiting.ended = true;
        table.pruneEarly(Work::hasEnded);
        assertFalse(table.awaited(notArrived));
    }
}
