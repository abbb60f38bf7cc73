package io.graphlane.actors.residency;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.graphlane.core.GraphlaneException;
import io.graphlane.core.backend.TransferBackend;
import io.graphlane.core.completion.SettableCompletion;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.actor.testkit.typed.javadsl.TestProbe;
import org.apache.pekko.actor.typed.ActorRef;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;

class ResidencyActorTest {
    private static final ActorTestKit KIT = ActorTestKit.create();

    @AfterAll
    static void shutdown() {
        KIT.shutdownTestKit();
    }

    /** A copy that counts how often it was closed. */
    static final class Copy implements AutoCloseable {
        final String name;
        final AtomicInteger closes = new AtomicInteger();

        Copy(String name) {
            this.name = name;
        }

        @Override
        public void close() {
            closes.incrementAndGet();
        }
    }

    record FakeTransfer<D>(D destination, SettableCompletion completion) implements TransferBackend.Transfer<D> { }

    /** Transfers whose completions the test completes or fails by hand, in the order they were started. */
    static final class FakeTransfers implements TransferBackend<String, Copy, Copy> {
        final List<FakeTransfer<Copy>> started = new CopyOnWriteArrayList<>();
        final Map<String, Integer> count = new ConcurrentHashMap<>();

        @Override
        public Transfer<Copy> promote(String executor, Copy host) {
            return start("device " + host.name);
        }

        @Override
        public Transfer<Copy> demote(String executor, Copy weight) {
            return start("host " + weight.name);
        }

        private FakeTransfer<Copy> start(String what) {
            FakeTransfer<Copy> t = new FakeTransfer<>(new Copy(what), new SettableCompletion(what));
            started.add(t);
            return t;
        }
    }

    private final FakeTransfers transfers = new FakeTransfers();
    private final TestProbe<ResidencyActor.Reply<Copy, Copy>> probe = KIT.createTestProbe();

    private ActorRef<ResidencyActor.Command<Copy, Copy>> actor(long budget, String... units) {
        ActorRef<ResidencyActor.Command<Copy, Copy>> ref = KIT.spawn(ResidencyActor.create(transfers, "copy-lane", new ResidencyLedger("cpu0", budget)));
        for (String u : units) {
            ref.tell(new ResidencyActor.Register<>(u, new Copy(u), 40, probe.getRef()));
            assertInstanceOf(ResidencyActor.Done.class, probe.receiveMessage());
        }
        return ref;
    }

    private FakeTransfer<Copy> transfer(int index) {
        probe.awaitAssert(() -> {
            assertTrue(transfers.started.size() > index);
            return null;
        });
        return transfers.started.get(index);
    }

    @Test
    void aBatchIsPublishedOnlyAfterItsTransfersCompleted() {
        ActorRef<ResidencyActor.Command<Copy, Copy>> actor = actor(100, "a", "b");
        actor.tell(new ResidencyActor.Promote<>(List.of("a", "b"), probe.getRef()));
        FakeTransfer<Copy> a = transfer(0);
        FakeTransfer<Copy> b = transfer(1);
        actor.tell(new ResidencyActor.Acquire<>("a", probe.getRef()));
        ResidencyActor.Refused<?, ?> early = assertInstanceOf(ResidencyActor.Refused.class, probe.receiveMessage());
        assertTrue(early.message().contains("PROMOTING"), early.message());

        a.completion().succeed();
        probe.expectNoMessage(Duration.ofMillis(100));
        b.completion().succeed();
        assertInstanceOf(ResidencyActor.Promoted.class, probe.receiveMessage());
        actor.tell(new ResidencyActor.Acquire<>("a", probe.getRef()));
        ResidencyActor.Acquired<?, ?> acquired = assertInstanceOf(ResidencyActor.Acquired.class, probe.receiveMessage());
        assertSame(a.destination(), acquired.weight());
    }

    @Test
    void aBatchThatDoesNotFitIsRefusedWithItsBlockersAndStartsNothing() {
        ActorRef<ResidencyActor.Command<Copy, Copy>> actor = actor(100, "a", "b", "c");
        actor.tell(new ResidencyActor.Promote<>(List.of("a", "b"), probe.getRef()));
        transfer(0).completion().succeed();
        transfer(1).completion().succeed();
        assertInstanceOf(ResidencyActor.Promoted.class, probe.receiveMessage());
        actor.tell(new ResidencyActor.Pin<>("a"));
        actor.tell(new ResidencyActor.Acquire<>("b", probe.getRef()));
        assertInstanceOf(ResidencyActor.Acquired.class, probe.receiveMessage());

        actor.tell(new ResidencyActor.Promote<>(List.of("c"), probe.getRef()));
        ResidencyActor.Refused<?, ?> refused = assertInstanceOf(ResidencyActor.Refused.class, probe.receiveMessage());
        assertEquals(2, refused.blockers().size(), refused.blockers().toString());
        assertEquals(2, transfers.started.size(), "a refused batch starts no transfer");

        actor.tell(new ResidencyActor.Release<>("b"));
        actor.tell(new ResidencyActor.Promote<>(List.of("c"), probe.getRef()));
        transfer(2).completion().succeed();
        ResidencyActor.Promoted<?, ?> promoted = assertInstanceOf(ResidencyActor.Promoted.class, probe.receiveMessage());
        assertEquals(List.of("b"), promoted.evicted());
        assertEquals(1, transfers.started.get(1).destination().closes.get(), "the evicted device copy is freed");
    }

    @Test
    void aDemotionKeepsTheDeviceCopyUntilTheHostCopyCompleted() {
        ActorRef<ResidencyActor.Command<Copy, Copy>> actor = actor(100, "a");
        actor.tell(new ResidencyActor.Promote<>(List.of("a"), probe.getRef()));
        FakeTransfer<Copy> promotion = transfer(0);
        promotion.completion().succeed();
        assertInstanceOf(ResidencyActor.Promoted.class, probe.receiveMessage());

        actor.tell(new ResidencyActor.Demote<>("a", probe.getRef()));
        FakeTransfer<Copy> demotion = transfer(1);
        probe.expectNoMessage(Duration.ofMillis(100));
        assertEquals(0, promotion.destination().closes.get(), "the device copy must stay until the host copy completed");
        demotion.completion().succeed();
        ResidencyActor.Demoted<?, ?> demoted = assertInstanceOf(ResidencyActor.Demoted.class, probe.receiveMessage());
        assertSame(demotion.destination(), demoted.host());
        assertEquals(1, promotion.destination().closes.get());
        actor.tell(new ResidencyActor.GetState<>("a", probe.getRef()));
        ResidencyActor.State<?, ?> state = assertInstanceOf(ResidencyActor.State.class, probe.receiveMessage());
        assertEquals(ResidencyLedger.DeviceState.ABSENT, state.state());
        assertEquals(0, state.reservedBytes());
    }

    @Test
    void aFailedDemotionFallsBackToTheDeviceCopy() {
        ActorRef<ResidencyActor.Command<Copy, Copy>> actor = actor(100, "a");
        actor.tell(new ResidencyActor.Promote<>(List.of("a"), probe.getRef()));
        FakeTransfer<Copy> promotion = transfer(0);
        promotion.completion().succeed();
        assertInstanceOf(ResidencyActor.Promoted.class, probe.receiveMessage());

        actor.tell(new ResidencyActor.Demote<>("a", probe.getRef()));
        FakeTransfer<Copy> demotion = transfer(1);
        demotion.completion().fail(new GraphlaneException("host copy of a failed"));
        ResidencyActor.DemotionFailed<?, ?> failed = assertInstanceOf(ResidencyActor.DemotionFailed.class, probe.receiveMessage());
        assertTrue(failed.cause().getMessage().contains("host copy of a failed"));
        assertEquals(1, demotion.destination().closes.get(), "the failed host copy is dropped");
        assertEquals(0, promotion.destination().closes.get());
        actor.tell(new ResidencyActor.Acquire<>("a", probe.getRef()));
        assertSame(promotion.destination(), assertInstanceOf(ResidencyActor.Acquired.class, probe.receiveMessage()).weight());
    }

    @Test
    void anAbandonedPromotionsLateResultIsIgnored() {
        ActorRef<ResidencyActor.Command<Copy, Copy>> actor = actor(100, "a");
        TestProbe<ResidencyActor.Reply<Copy, Copy>> firstBatch = KIT.createTestProbe();
        actor.tell(new ResidencyActor.Promote<>(List.of("a"), firstBatch.getRef()));
        FakeTransfer<Copy> stale = transfer(0);
        actor.tell(new ResidencyActor.AbandonPromotion<>("a", probe.getRef()));
        assertInstanceOf(ResidencyActor.Done.class, probe.receiveMessage());
        actor.tell(new ResidencyActor.Promote<>(List.of("a"), probe.getRef()));
        FakeTransfer<Copy> current = transfer(1);

        stale.completion().succeed();
        ResidencyActor.PromotionFailed<?, ?> abandoned = assertInstanceOf(ResidencyActor.PromotionFailed.class, firstBatch.receiveMessage());
        assertTrue(abandoned.causes().get("a").getMessage().contains("abandoned"));
        assertEquals(1, stale.destination().closes.get(), "the stale copy is freed once its transfer ended");
        actor.tell(new ResidencyActor.Acquire<>("a", probe.getRef()));
        assertInstanceOf(ResidencyActor.Refused.class, probe.receiveMessage(), "the stale result must not publish a copy");

        current.completion().succeed();
        assertInstanceOf(ResidencyActor.Promoted.class, probe.receiveMessage());
        actor.tell(new ResidencyActor.Acquire<>("a", probe.getRef()));
        assertSame(current.destination(), assertInstanceOf(ResidencyActor.Acquired.class, probe.receiveMessage()).weight());
    }

    @Test
    void stoppingClosesEveryCopyTheActorOwns() {
        Copy host = new Copy("a");
        ActorRef<ResidencyActor.Command<Copy, Copy>> actor = KIT.spawn(ResidencyActor.create(transfers, "copy-lane", new ResidencyLedger("cpu0", 100)));
        actor.tell(new ResidencyActor.Register<>("a", host, 40, probe.getRef()));
        assertInstanceOf(ResidencyActor.Done.class, probe.receiveMessage());
        actor.tell(new ResidencyActor.Promote<>(List.of("a"), probe.getRef()));
        transfer(0).completion().succeed();
        assertInstanceOf(ResidencyActor.Promoted.class, probe.receiveMessage());
        KIT.stop(actor);
        assertEquals(1, host.closes.get());
        assertEquals(1, transfers.started.get(0).destination().closes.get());
    }
}
