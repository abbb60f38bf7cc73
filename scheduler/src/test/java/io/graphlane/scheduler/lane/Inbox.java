package io.graphlane.scheduler.lane;

import io.graphlane.actors.lane.LaneProtocol;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.graphlane.actors.lane.LaneProtocol.LaneReply;
import io.graphlane.core.graph.CompletionHandle;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.actor.testkit.typed.javadsl.TestProbe;
import org.apache.pekko.actor.typed.ActorRef;

/** A probe for lane replies that unpacks batches and lets a test expect replies per handle, in any interleaving. */
final class Inbox {
    private final TestProbe<LaneReply> probe;
    private final List<LaneReply> buffered = new ArrayList<>();

    Inbox(ActorTestKit kit) {
        this.probe = kit.createTestProbe(LaneReply.class);
    }

    ActorRef<LaneReply> ref() {
        return probe.ref();
    }

    /** The next reply of type {@code type} about {@code handle}, waiting up to 10 s; other replies stay buffered. */
    <T extends LaneReply> T expect(Class<T> type, CompletionHandle handle) {
        long deadline = System.nanoTime() + Duration.ofSeconds(10).toNanos();
        while (true) {
            for (Iterator<LaneReply> it = buffered.iterator(); it.hasNext(); ) {
                LaneReply r = it.next();
                if (type.isInstance(r) && handle.equals(handleOf(r))) {
                    it.remove();
                    return type.cast(r);
                }
            }
            long left = deadline - System.nanoTime();
            assertTrue(left > 0, "no " + type.getSimpleName() + " for " + handle + " within 10 s; buffered: " + buffered);
            probe.receiveMessage(Duration.ofNanos(left)).forEach(buffered::add);
        }
    }

    /** Asserts that nothing about {@code handle} arrives within {@code wait}; replies about other handles are kept. */
    void expectNothingFor(CompletionHandle handle, Duration wait) {
        long deadline = System.nanoTime() + wait.toNanos();
        long left;
        while ((left = deadline - System.nanoTime()) > 0) {
            try {
                probe.receiveMessage(Duration.ofNanos(Math.max(1, left))).forEach(buffered::add);
            } catch (AssertionError nothingArrived) {
                break; // the probe's timeout: nothing more came within the wait
            }
        }
        for (LaneReply r : buffered) {
            assertTrue(!handle.equals(handleOf(r)), "unexpected " + r);
        }
    }

    /** The outcome of {@code handle}'s Finished reply, asserting it failed with {@code cause}. */
    <X extends Throwable> X expectFailure(CompletionHandle handle, Class<X> cause) {
        LaneProtocol.Finished f = expect(LaneProtocol.Finished.class, handle);
        var failed = assertInstanceOf(io.graphlane.core.completion.Outcome.Failed.class, f.outcome(), "outcome of " + handle);
        return assertInstanceOf(cause, failed.cause(), "failure of " + handle);
    }

    void expectSuccess(CompletionHandle handle) {
        LaneProtocol.Finished f = expect(LaneProtocol.Finished.class, handle);
        assertEquals(io.graphlane.core.completion.Outcome.SUCCESS, f.outcome(), "outcome of " + handle);
    }

    private static CompletionHandle handleOf(LaneReply r) {
        if (r instanceof LaneProtocol.Submitted s) {
            return s.handle();
        }
        if (r instanceof LaneProtocol.Rejected s) {
            return s.handle();
        }
        if (r instanceof LaneProtocol.Finished s) {
            return s.handle();
        }
        throw new IllegalArgumentException("a batch must be unpacked first: " + r);
    }
}
