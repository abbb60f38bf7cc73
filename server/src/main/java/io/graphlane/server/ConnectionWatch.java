package io.graphlane.server;

import org.apache.pekko.NotUsed;
import org.apache.pekko.http.javadsl.model.HttpRequest;
import org.apache.pekko.http.javadsl.model.HttpResponse;
import org.apache.pekko.http.javadsl.model.ResponseEntity;
import org.apache.pekko.stream.Attributes;
import org.apache.pekko.stream.BidiShape;
import org.apache.pekko.stream.Inlet;
import org.apache.pekko.stream.Outlet;
import org.apache.pekko.stream.stage.AbstractInHandler;
import org.apache.pekko.stream.stage.AbstractOutHandler;
import org.apache.pekko.stream.stage.AsyncCallback;
import org.apache.pekko.stream.stage.GraphStage;
import org.apache.pekko.stream.stage.GraphStageLogic;
import org.apache.pekko.stream.stage.TimerGraphStageLogic;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Watches one HTTP connection between Pekko HTTP's server layer (requests in, responses out) and the handler: a
 * connection with no request in flight must deliver a complete request head within the header-read timeout (from its
 * opening, and again once its last response has been sent in full), or it is closed; request and response bodies are
 * watched for a client that holds them up ({@link BodyWatch}). {@code onEnd} runs once the connection has ended.
 */
final class ConnectionWatch extends GraphStage<BidiShape<HttpRequest, HttpRequest, HttpResponse, HttpResponse>> {
    private static final Logger LOG = LoggerFactory.getLogger(ConnectionWatch.class);
    private static final String HEADER_READ = "header-read";

    private final Inlet<HttpRequest> requestIn = Inlet.create("ConnectionWatch.requestIn");
    private final Outlet<HttpRequest> requestOut = Outlet.create("ConnectionWatch.requestOut");
    private final Inlet<HttpResponse> responseIn = Inlet.create("ConnectionWatch.responseIn");
    private final Outlet<HttpResponse> responseOut = Outlet.create("ConnectionWatch.responseOut");
    private final BidiShape<HttpRequest, HttpRequest, HttpResponse, HttpResponse> shape =
            BidiShape.of(requestIn, requestOut, responseIn, responseOut);
    private final ConnectionLimits limits;
    private final String client;
    private final Runnable onEnd;

    /** Watches a connection from {@code client} (for the log) under {@code limits}. */
    ConnectionWatch(ConnectionLimits limits, String client, Runnable onEnd) {
        this.limits = limits;
        this.client = client;
        this.onEnd = onEnd;
    }

    @Override
    public BidiShape<HttpRequest, HttpRequest, HttpResponse, HttpResponse> shape() {
        return shape;
    }

    @Override
    public GraphStageLogic createLogic(Attributes inheritedAttributes) {
        return new TimerGraphStageLogic(shape) {
            /** Requests whose heads arrived and whose responses have not been sent in full. */
            private int open;
            private AsyncCallback<NotUsed> responseSent;

            {
                setHandler(requestIn, new AbstractInHandler() {
                    @Override
                    public void onPush() {
                        HttpRequest request = grab(requestIn);
                        open++;
                        cancelTimer(HEADER_READ);
                        push(requestOut, request.entity().isStrict() ? request
                                : request.withEntity(BodyWatch.fromClient(request.entity(), limits.idleTimeout())));
                    }

                    @Override
                    public void onUpstreamFinish() {
                        complete(requestOut);
                    }
                });
                setHandler(requestOut, new AbstractOutHandler() {
                    @Override
                    public void onPull() {
                        pull(requestIn);
                    }

                    @Override
                    public void onDownstreamFinish(Throwable cause) {
                        cancel(requestIn, cause);
                    }
                });
                setHandler(responseIn, new AbstractInHandler() {
                    @Override
                    public void onPush() {
                        HttpResponse response = grab(responseIn);
                        ResponseEntity entity = response.entity();
                        if (entity.isStrict() || entity.isKnownEmpty()) {
                            push(responseOut, response);
                            sent();
                        } else {
                            push(responseOut, response.withEntity(BodyWatch.toClient(entity, limits.idleTimeout(),
                                    () -> responseSent.invoke(NotUsed.getInstance()))));
                        }
                    }

                    @Override
                    public void onUpstreamFinish() {
                        complete(responseOut);
                    }
                });
                setHandler(responseOut, new AbstractOutHandler() {
                    @Override
                    public void onPull() {
                        pull(responseIn);
                    }

                    @Override
                    public void onDownstreamFinish(Throwable cause) {
                        cancel(responseIn, cause);
                    }
                });
            }

            @Override
            public void preStart() {
                responseSent = createAsyncCallback(ignored -> sent());
                scheduleOnce(HEADER_READ, limits.headerReadTimeout());
            }

            /** A response went out in full: with none left in flight, the next request head is due in time. */
            private void sent() {
                open--;
                if (open == 0 && !isClosed(requestIn)) {
                    scheduleOnce(HEADER_READ, limits.headerReadTimeout());
                }
            }

            @Override
            public void onTimer(Object key) {
                LOG.debug("closing a connection from {}: no complete request head within {}", client,
                        ConnectionLimits.text(limits.headerReadTimeout()));
                completeStage();
            }

            @Override
            public void postStop() {
                onEnd.run();
            }
        };
    }
}
