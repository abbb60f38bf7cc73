package io.graphlane.scheduler.pipeline;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.actor.testkit.typed.javadsl.ManualTime;
import org.apache.pekko.actor.testkit.typed.javadsl.TestProbe;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The request lifecycle both engines share, driven from inside an actor as an engine drives it, with the deadline
 * timers on manual time: each test reads the listener's calls and the engine's end hook in the order they happened.
 */
class RequestLedgerTest {
    private static final ActorTestKit TESTKIT = ActorTestKit.create(ManualTime.config().withFallback(ActorTestKit.applicationTestConfig()));
    private static final ManualTime TIME = ManualTime.get(TESTKIT.system());
    private static final Duration HOUR = Duration.ofHours(1);

    private sealed interface Msg {
    }

    /** Runs {@code action} on the ledger, then answers with every event recorded since the last answer. */
    private record Run(Consumer<RequestLedger<Msg>> action, ActorRef<List<String>> replyTo) implements Msg {
    }

    private record Deadline(long requestId) implements Msg {
    }

    private final AtomicInteger held = new AtomicInteger();
    private final List<String> events = new ArrayList<>();
    private ActorRef<Msg> engine;
    private TestProbe<List<String>> answers;

    @BeforeEach
    void spawn() {
        answers = TESTKIT.createTestProbe();
        engine = TESTKIT.spawn(Behaviors.setup(ctx -> Behaviors.withTimers(timers -> {
            RequestLedger<Msg> ledger = new RequestLedger<>(timers, Deadline::new, held, e -> events.add("ended " + e.id()));
            return Behaviors.receive(Msg.class)
                    .onMessage(Run.class, run -> {
                        run.action().accept(ledger);
                        run.replyTo().tell(List.copyOf(events));
                        events.clear();
                        return Behaviors.same();
                    })
                    .onMessage(Deadline.class, d -> {
                        ledger.deadlineReached(d.requestId());
                        return Behaviors.same();
                    })
                    .build();
        })));
    }

    @AfterEach
    void stop() {
        TESTKIT.stop(engine);
    }

    @AfterAll
    static void shutdown() {
        TESTKIT.shutdownTestKit();
    }

    /** What happened since the last call, then during {@code action}. */
    private List<String> run(Consumer<RequestLedger<Msg>> action) {
        engine.tell(new Run(action, answers.getRef()));
        return answers.receiveMessage();
    }

    private void admit(long id, int maxNewTokens, int endOfSequence, long deadlineNanos) {
        held.incrementAndGet();
        assertEquals(List.of("admitted true"), run(l -> events.add("admitted " + (l.admit(id,
                new PipelineRequest(new int[] {1, 2}, maxNewTokens, endOfSequence, deadlineNanos, null), listener(id)) != null))));
    }

    private EngineListener listener(long id) {
        return new EngineListener() {
            @Override
            public void onToken(int tokenId) {
                events.add(id + " token " + tokenId);
            }

            @Override
            public void onFinished(EngineFinishReason reason) {
                events.add(id + " finished " + reason + " held " + held.get());
            }

            @Override
            public void onFailed(Throwable cause) {
                events.add(id + " failed " + cause.getMessage() + " held " + held.get());
            }
        };
    }

    private static void send(RequestLedger<Msg> l, long id) {
        l.stepSent(l.get(id));
    }

    private static void returnWithToken(RequestLedger<Msg> l, long id, int token) {
        RequestLedger.Entry e = l.get(id);
        if (l.stepReturned(e)) {
            l.tokenSampled(e, token);
        }
    }

    @Test
    void aDeadlineReachedWhileAStepIsInFlightLetsThatStepsTokenThroughAndEndsTheRequestBeforeAnotherStep() {
        admit(1, 10, -1, System.nanoTime() + HOUR.toNanos());
        run(l -> send(l, 1));
        TIME.timePasses(HOUR.plusSeconds(1));
        assertEquals(List.of("1 token 42", "ended 1",
                        "1 failed request 1 passed its deadline after 1 generated token(s); no further step was submitted held 0"),
                run(l -> returnWithToken(l, 1, 42)));
    }

    @Test
    void aDeadlineReachedBetweenStepsEndsTheRequestAtOnce() {
        admit(1, 10, -1, System.nanoTime() + HOUR.toNanos());
        assertEquals(List.of("1 token 7"), run(l -> {
            send(l, 1);
            returnWithToken(l, 1, 7);
        }));
        TIME.timePasses(HOUR.plusSeconds(1));
        assertEquals(List.of("ended 1",
                        "1 failed request 1 passed its deadline after 1 generated token(s); no further step was submitted held 0"),
                run(l -> { }));
    }

    @Test
    void aRequestPastItsDeadlineOnAdmissionEndsWithoutAStep() {
        held.incrementAndGet();
        assertEquals(List.of("ended 1",
                        "1 failed request 1 passed its deadline after 0 generated token(s); no further step was submitted held 0",
                        "admitted false"),
                run(l -> events.add("admitted " + (l.admit(1, new PipelineRequest(new int[] {1}, 4, -1, System.nanoTime() - 1, null),
                        listener(1)) != null))));
    }

    @Test
    void aCancelWhileAStepIsInFlightIsReportedAtOnceAndTheRequestEndsUnobservedWhenTheStepReturns() {
        admit(1, 10, -1, System.nanoTime() + HOUR.toNanos());
        assertEquals(List.of("1 failed request 1 was cancelled held 1"), run(l -> {
            send(l, 1);
            l.cancel(1);
            l.cancel(1);
        }));
        // The deadline passing now changes nothing: the cancel was the first outcome recorded.
        TIME.timePasses(HOUR.plusSeconds(1));
        assertEquals(List.of("ended 1"), run(l -> returnWithToken(l, 1, 42)));
        assertEquals(0, held.get());
    }

    @Test
    void theEndOfSequenceTokenAndTheLengthLimitEndARequestNormally() {
        admit(1, 10, 9, Long.MAX_VALUE);
        admit(2, 2, 9, Long.MAX_VALUE);
        assertEquals(List.of("1 token 5", "2 token 5", "1 token 9", "ended 1", "1 finished END_OF_SEQUENCE held 1",
                "2 token 6", "ended 2", "2 finished LENGTH held 0"), run(l -> {
                    send(l, 1);
                    returnWithToken(l, 1, 5);
                    send(l, 2);
                    returnWithToken(l, 2, 5);
                    send(l, 1);
                    returnWithToken(l, 1, 9);
                    send(l, 2);
                    returnWithToken(l, 2, 6);
                }));
    }

    @Test
    void failAllEndsEveryRequestInAdmissionOrderAndReportsEachOnce() {
        admit(1, 10, -1, Long.MAX_VALUE);
        admit(2, 10, -1, Long.MAX_VALUE);
        admit(3, 10, -1, Long.MAX_VALUE);
        assertEquals(List.of("2 failed request 2 was cancelled held 3"), run(l -> {
            send(l, 2);
            l.cancel(2);
        }));
        assertEquals(List.of("ended 1", "1 failed stop 1 held 2", "ended 2", "ended 3", "3 failed stop 3 held 0"),
                run(l -> l.failAll(id -> new IllegalStateException("stop " + id))));
        assertEquals(List.of("left 0"), run(l -> events.add("left " + l.size())));
    }
}
