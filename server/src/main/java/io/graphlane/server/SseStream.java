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
import org.apache.pekko.stream.javadsl.Source;
import org.apache.pekko.util.ByteString;

/**
 * One server-sent-events response: {@code data: <json>} events offered from any thread (a generation's listener),
 * ended by {@code data: [DONE]}. The queue is bounded by what the response can ever hold, so an offer never blocks
 * and never drops.
 */
final class SseStream {
    private final BoundedSourceQueue<ByteString> queue;
    private final Source<ByteString, NotUsed> events;
    private final Object lock = new Object();

    /** A stream that holds at most {@code capacity} events before the client reads them, {@code [DONE]} included. */
    SseStream(ActorSystem<?> system, int capacity) {
        Pair<BoundedSourceQueue<ByteString>, Source<ByteString, NotUsed>> pair = Source.<ByteString>queue(capacity).preMaterialize(system);
        this.queue = pair.first();
        this.events = pair.second();
    }

    /** Sends one event. */
    void send(Object event) {
        synchronized (lock) {
            queue.offer(ByteString.fromString("data: " + event + "\n\n"));
        }
    }

    /** Sends {@code [DONE]} and ends the response. */
    void done() {
        synchronized (lock) {
            queue.offer(ByteString.fromString("data: [DONE]\n\n"));
            queue.complete();
        }
    }

    /** The 200 response carrying the events; {@code onEnd} runs once the response ended, done or the client gone. */
    HttpResponse response(Runnable onEnd) {
        Source<ByteString, NotUsed> watched = events.watchTermination((mat, ended) -> {
            ended.whenComplete((ok, err) -> onEnd.run());
            return mat;
        });
        return HttpResponse.create()
                .withStatus(StatusCodes.OK)
                .withEntity(HttpEntities.createChunked(ContentTypes.create(MediaTypes.TEXT_EVENT_STREAM), watched));
    }
}
