package io.graphlane.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.http.javadsl.model.ContentTypes;
import org.apache.pekko.http.javadsl.model.HttpEntities;
import org.apache.pekko.http.javadsl.model.ResponseEntity;
import org.apache.pekko.japi.Pair;
import org.apache.pekko.stream.BoundedSourceQueue;
import org.apache.pekko.stream.javadsl.Sink;
import org.apache.pekko.stream.javadsl.Source;
import org.apache.pekko.util.ByteString;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.reactivestreams.Subscriber;
import org.reactivestreams.Subscription;

/** A response body the client stops reading is failed after the idle timeout; its end is reported once. */
class BodyWatchTest {
    private static ActorTestKit testKit;

    @BeforeAll
    static void start() {
        testKit = ActorTestKit.create();
    }

    @AfterAll
    static void stop() {
        testKit.shutdownTestKit();
    }

    /** A reader that asks for exactly as many chunks as it is told to, like a client reading a socket. */
    private static final class Reader implements Subscriber<ByteString> {
        final List<String> got = new CopyOnWriteArrayList<>();
        final CompletableFuture<Throwable> ended = new CompletableFuture<>();
        final CompletableFuture<Subscription> subscription = new CompletableFuture<>();
        final CountDownLatch first = new CountDownLatch(1);

        @Override
        public void onSubscribe(Subscription s) {
            subscription.complete(s);
        }

        @Override
        public void onNext(ByteString chunk) {
            got.add(chunk.utf8String());
            first.countDown();
        }

        @Override
        public void onError(Throwable t) {
            ended.complete(t);
        }

        @Override
        public void onComplete() {
            ended.complete(null);
        }
    }

    @Test
    void aResponseChunkTheClientDoesNotTakeFailsTheBodyAfterTheIdleTimeout() throws Exception {
        Pair<BoundedSourceQueue<ByteString>, Source<ByteString, org.apache.pekko.NotUsed>> events =
                Source.<ByteString>queue(256).preMaterialize(testKit.system());
        CountDownLatch endReported = new CountDownLatch(1);
        ResponseEntity entity = BodyWatch.toClient(HttpEntities.createChunked(ContentTypes.TEXT_PLAIN_UTF8, events.second()),
                Duration.ofMillis(300), endReported::countDown);
        Reader reader = new Reader();
        entity.getDataBytes().runWith(Sink.asPublisher(org.apache.pekko.stream.javadsl.AsPublisher.WITHOUT_FANOUT), testKit.system())
                .subscribe(reader);
        reader.subscription.get(10, TimeUnit.SECONDS).request(1);
        events.first().offer(ByteString.fromString("one"));
        assertTrue(reader.first.await(10, TimeUnit.SECONDS), "the first chunk is read");
        // The client reads nothing more: once the buffers on the way are full, a chunk waits for it, and the body
        // fails once it waited too long.
        for (int i = 0; i < 200; i++) {
            events.first().offer(ByteString.fromString("more"));
        }
        Throwable failure = reader.ended.get(10, TimeUnit.SECONDS);
        assertInstanceOf(BodyWatch.ClientStalledException.class, failure);
        assertTrue(failure.getMessage().contains("read none of the response"), failure.getMessage());
        assertEquals(List.of("one"), reader.got);
        assertTrue(endReported.await(10, TimeUnit.SECONDS), "the body's end is reported");
    }

    @Test
    void aResponseTheClientReadsEndsWithEveryChunkAndReportsItsEnd() throws Exception {
        CountDownLatch endReported = new CountDownLatch(1);
        ResponseEntity entity = BodyWatch.toClient(HttpEntities.createChunked(ContentTypes.TEXT_PLAIN_UTF8,
                Source.from(List.of("a", "b", "c")).map(ByteString::fromString)), Duration.ofMillis(300), endReported::countDown);
        List<ByteString> read = entity.getDataBytes().runWith(Sink.seq(), testKit.system()).toCompletableFuture().get(10, TimeUnit.SECONDS);
        assertEquals(List.of("a", "b", "c"), read.stream().map(ByteString::utf8String).toList());
        assertTrue(endReported.await(10, TimeUnit.SECONDS), "the body's end is reported");
    }
}
