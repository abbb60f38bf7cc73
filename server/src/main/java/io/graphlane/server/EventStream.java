package io.graphlane.server;

import org.apache.pekko.NotUsed;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.http.javadsl.model.ContentTypes;
import org.apache.pekko.http.javadsl.model.HttpEntities;
import org.apache.pekko.http.javadsl.model.HttpResponse;
import org.apache.pekko.http.javadsl.model.MediaTypes;
import org.apache.pekko.http.javadsl.model.StatusCodes;
import org.apache.pekko.japi.Pair;
import org.apache.pekko.stream.BoundedSourceQueue;
import org.apache.pekko.stream.QueueOfferResult;
import org.apache.pekko.stream.javadsl.Source;
import org.apache.pekko.util.ByteString;

/**
 * The server-sent events of one streamed response: {@code data: <json>} events for its choices, then
 * {@code data: [DONE]} once every choice has ended. The queue is bounded by what the response can ever hold, so an
 * offer never blocks and never drops while the client reads. Thread-safe, and it never throws at its callers (the
 * generations' listeners, which run on the engine's threads): once the client went away or the stream ended, whatever
 * is sent is dropped.
 */
final class EventStream {
    private static final ByteString DONE = ByteString.fromString("data: [DONE]\n\n");

    private final BoundedSourceQueue<ByteString> queue;
    private final Source<ByteString, NotUsed> events;
    private int open;
    private boolean closed;

    /** A stream of {@code choices} choices, each sending at most {@code maxEventsPerChoice} events. */
    EventStream(ActorSystem<?> system, int choices, long maxEventsPerChoice) {
        long capacity = Math.min(Integer.MAX_VALUE - 1L, choices * (maxEventsPerChoice + 1) + 1);
        Pair<BoundedSourceQueue<ByteString>, Source<ByteString, NotUsed>> pair =
                Source.<ByteString>queue((int) capacity).preMaterialize(system);
        this.queue = pair.first();
        this.events = pair.second();
        this.open = choices;
    }

    /**
     * The 200 response carrying the events; {@code onEnd} runs once when the HTTP side ends the stream: completed,
     * failed or cancelled by a client that went away.
     */
    HttpResponse response(Runnable onEnd) {
        Source<ByteString, NotUsed> watched = events.watchTermination((mat, done) -> {
            done.whenComplete((ok, err) -> {
                synchronized (this) {
                    closed = true;
                }
                onEnd.run();
            });
            return mat;
        });
        return HttpResponse.create()
                .withStatus(StatusCodes.OK)
                .withEntity(HttpEntities.createChunked(ContentTypes.create(MediaTypes.TEXT_EVENT_STREAM), watched));
    }

    /** Sends one event (its JSON text); dropped once the stream ended. */
    synchronized void send(Object json) {
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
