package io.graphlane.server;

import java.time.Duration;
import org.apache.pekko.NotUsed;
import org.apache.pekko.http.javadsl.model.RequestEntity;
import org.apache.pekko.http.javadsl.model.ResponseEntity;
import org.apache.pekko.stream.Attributes;
import org.apache.pekko.stream.FlowShape;
import org.apache.pekko.stream.Inlet;
import org.apache.pekko.stream.Outlet;
import org.apache.pekko.stream.javadsl.Flow;
import org.apache.pekko.stream.stage.AbstractInHandler;
import org.apache.pekko.stream.stage.AbstractOutHandler;
import org.apache.pekko.stream.stage.GraphStage;
import org.apache.pekko.stream.stage.GraphStageLogic;
import org.apache.pekko.stream.stage.TimerGraphStageLogic;
import org.apache.pekko.util.ByteString;

/**
 * Watches one request or response body for a client that holds it up: a request body the server asked for and the
 * client does not send, or a response body the server has ready and the client does not read. Once a body has stood
 * still like that for the idle timeout, its stream fails with {@link ClientStalledException}, which ends the connection.
 * The time the server itself takes (a route not yet reading the body, a stream waiting for its next token) never counts.
 */
final class BodyWatch extends GraphStage<FlowShape<ByteString, ByteString>> {
    private static final String IDLE = "idle";

    /** Which way the body goes. */
    enum Direction {
        /** A request body: held up while the server waits for bytes the client has not sent. */
        FROM_CLIENT,
        /** A response body: held up while a chunk waits for the client to read the ones before it. */
        TO_CLIENT
    }

    /** A body the client held up for longer than the idle timeout. */
    static final class ClientStalledException extends RuntimeException {
        ClientStalledException(String message) {
            super(message, null, false, false);
        }
    }

    private final Inlet<ByteString> in = Inlet.create("BodyWatch.in");
    private final Outlet<ByteString> out = Outlet.create("BodyWatch.out");
    private final FlowShape<ByteString, ByteString> shape = FlowShape.of(in, out);
    private final Direction direction;
    private final Duration idleTimeout;
    private final Runnable onEnd;

    private BodyWatch(Direction direction, Duration idleTimeout, Runnable onEnd) {
        this.direction = direction;
        this.idleTimeout = idleTimeout;
        this.onEnd = onEnd;
    }

    /** {@code entity} with its bytes watched for a client that stops sending them. */
    static RequestEntity fromClient(RequestEntity entity, Duration idleTimeout) {
        org.apache.pekko.stream.scaladsl.Flow<ByteString, ByteString, Object> watch = watch(Direction.FROM_CLIENT, idleTimeout, () -> { });
        if (entity instanceof org.apache.pekko.http.scaladsl.model.HttpEntity.Default known) {
            return known.transformDataBytes(known.contentLength(), watch);
        }
        return ((org.apache.pekko.http.scaladsl.model.RequestEntity) entity).transformDataBytes(watch);
    }

    /** {@code entity} with its bytes watched for a client that stops reading them; {@code onEnd} runs once it ended. */
    static ResponseEntity toClient(ResponseEntity entity, Duration idleTimeout, Runnable onEnd) {
        org.apache.pekko.stream.scaladsl.Flow<ByteString, ByteString, Object> watch = watch(Direction.TO_CLIENT, idleTimeout, onEnd);
        if (entity instanceof org.apache.pekko.http.scaladsl.model.HttpEntity.Default known) {
            return known.transformDataBytes(known.contentLength(), watch);
        }
        return ((org.apache.pekko.http.scaladsl.model.ResponseEntity) entity).transformDataBytes(watch);
    }

    @SuppressWarnings("unchecked")
    private static org.apache.pekko.stream.scaladsl.Flow<ByteString, ByteString, Object> watch(Direction direction, Duration idleTimeout,
                                                                                            Runnable onEnd) {
        Flow<ByteString, ByteString, NotUsed> flow = Flow.fromGraph(new BodyWatch(direction, idleTimeout, onEnd));
        return (org.apache.pekko.stream.scaladsl.Flow<ByteString, ByteString, Object>) (Object) flow.asScala();
    }

    @Override
    public FlowShape<ByteString, ByteString> shape() {
        return shape;
    }

    @Override
    public GraphStageLogic createLogic(Attributes inheritedAttributes) {
        return direction == Direction.FROM_CLIENT ? new FromClient() : new ToClient();
    }

    /** Fails the body once the client held it up for the idle timeout; runs {@code onEnd} however it ends. */
    private abstract class Watching extends TimerGraphStageLogic {
        Watching() {
            super(shape);
        }

        @Override
        public void onTimer(Object key) {
            failStage(new ClientStalledException(direction == Direction.FROM_CLIENT
                    ? "the client sent none of its request body for " + ConnectionLimits.text(idleTimeout)
                    : "the client read none of the response for " + ConnectionLimits.text(idleTimeout)));
        }

        @Override
        public void postStop() {
            onEnd.run();
        }
    }

    /** Held up while the reader has asked for bytes and the client has sent none. */
    private final class FromClient extends Watching {
        FromClient() {
            setHandler(in, new AbstractInHandler() {
                @Override
                public void onPush() {
                    cancelTimer(IDLE);
                    push(out, grab(in));
                }
            });
            setHandler(out, new AbstractOutHandler() {
                @Override
                public void onPull() {
                    pull(in);
                    scheduleOnce(IDLE, idleTimeout);
                }
            });
        }
    }

    /**
     * Held up while a chunk waits for the client to take it. Asks for the next chunk as soon as one is passed on, so
     * that a chunk the server has ready is seen waiting (one chunk is held at most).
     */
    private final class ToClient extends Watching {
        private ByteString waiting;

        ToClient() {
            setHandler(in, new AbstractInHandler() {
                @Override
                public void onPush() {
                    ByteString chunk = grab(in);
                    if (isAvailable(out)) {
                        push(out, chunk);
                        pull(in);
                    } else {
                        waiting = chunk;
                        scheduleOnce(IDLE, idleTimeout);
                    }
                }

                @Override
                public void onUpstreamFinish() {
                    if (waiting == null) {
                        completeStage();
                    }
                }
            });
            setHandler(out, new AbstractOutHandler() {
                @Override
                public void onPull() {
                    if (waiting == null) {
                        return;
                    }
                    push(out, waiting);
                    waiting = null;
                    cancelTimer(IDLE);
                    if (isClosed(in)) {
                        completeStage();
                    } else {
                        pull(in);
                    }
                }
            });
        }

        @Override
        public void preStart() {
            pull(in);
        }
    }
}
