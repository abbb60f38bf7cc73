package io.graphlane.server;

import org.apache.pekko.NotUsed;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.japi.Pair;
import org.apache.pekko.stream.BoundedSourceQueue;
import org.apache.pekko.stream.QueueOfferResult;
import org.apache.pekko.stream.javadsl.Source;
import org.apache.pekko.util.ByteString;

/**
 * The server-sent events of one streamed response: {@code data:} lines for its choices, then {@code data: [DONE]}
 * once every choice has ended. Thread-safe, and it never throws at its callers (the generations' listeners, which run
 * on the engine's threads): once the client went away or the stream ended, whatever is sent is dropped.
 * {@code onTermination} runs once when the HTTP side ends the stream: completed, failed or cancelled by the client.
 */
final class EventStream {
    private static final ByteString DONE = ByteString.fromString("data: [DONE]\n\n");

    private final BoundedSourceQueue<ByteString> queue;
    private final Source<ByteString, NotUsed> source;
    private int open;
    private boolean closed;

    /**
     * A stream of {@code choices} choices, each sending at most {@code maxEventsPerChoice} events; {@code onTermination}
     * runs when the HTTP side ends it.
     */
    EventStream(ActorSystem<?> system, int choices, long maxEventsPerChoice, Runnable onTermination) {
        long capacity = Math.min(Integer.MAX_VALUE - 1L, choices * (maxEventsPerChoice + 1) + 1);
        Pair<BoundedSourceQueue<ByteString>, Source<ByteString, NotUsed>> pair =
                Source.<ByteString>queue((int) capacity).preMaterialize(system);
        this.queue = pair.first();
        this.open = choices;
        this.source = pair.second().watchTermination((mat, done) -> {
            done.whenComplete((ok, err) -> {
                synchronized (this) {
                    closed = true;
                }
                onTermination.run();
            });
            return mat;
        });
    }

    /** The response body. */
    Source<ByteString, NotUsed> source() {
        return source;
    }

    /** Sends one event; dropped once the stream ended. */
    synchronized void send(String json) {
        if (closed) {
            return;
        }
        QueueOfferResult r = queue.offer(ByteString.fromString("data: " + json + "\n\n"));
        if (!(r instanceof QueueOfferResult.Enqueued$)) {
            // The client went away (or the stream failed): nothing more can reach it.
            closed = true;
        }
    }

    /** One choice ended; after the last, sends {@code [DONE]} and completes the stream. */
    synchronized void choiceEnded() {
        if (closed || --open > 0) {
            return;
        }
        closed = true;
        queue.offer(DONE);
        try {
            queue.complete();
        } catch (IllegalStateException alreadyEnded) {
            // The client cancelled between the last offer and now; nothing to complete.
        }
    }
}
