package io.graphlane.server;

import java.net.InetAddress;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;
import java.util.function.UnaryOperator;
import org.apache.pekko.NotUsed;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.http.impl.engine.server.HttpAttributes;
import org.apache.pekko.http.javadsl.Http;
import org.apache.pekko.http.javadsl.ServerBinding;
import org.apache.pekko.http.javadsl.model.HttpRequest;
import org.apache.pekko.http.javadsl.model.HttpResponse;
import org.apache.pekko.http.javadsl.settings.ServerSettings;
import org.apache.pekko.stream.Attributes;
import org.apache.pekko.stream.javadsl.BidiFlow;
import org.apache.pekko.stream.javadsl.Flow;
import org.apache.pekko.stream.javadsl.Sink;
import org.apache.pekko.stream.javadsl.Source;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import scala.concurrent.duration.FiniteDuration;

/**
 * Binds a Pekko HTTP handler on a port under {@link ConnectionLimits}: a connection over the per-client or the total
 * cap is closed as soon as it is accepted (Pekko HTTP's own {@code max-connections} would stop accepting instead, and
 * leave every later client, health checks included, waiting in the listen queue), and every connection is watched by
 * a {@link ConnectionWatch} (header-read timeout, idle timeout).
 *
 * <p>Pekko HTTP's own timeouts are set around these: its request timeout is the given one (the longest a route may
 * take to answer), and its idle timeout (no byte either way) is only a backstop, the longer of the request and
 * header-read timeouts plus the idle timeout, since it would otherwise cut a connection whose answer is still being
 * computed.
 */
public final class LimitedBinding {
    private static final Logger LOG = LoggerFactory.getLogger(LimitedBinding.class);
    private static final InetAddress UNKNOWN_CLIENT = unknownClient();

    private LimitedBinding() {
    }

    /**
     * Binds {@code handler} (materialized once per connection) on {@code host:port} (0 picks a free port) under
     * {@code limits}. {@code requestTimeout} is how long a route may take to answer before Pekko HTTP answers 503 for it
     * (empty: the system's {@code pekko.http.server.request-timeout}); {@code adapt} changes any other server setting.
     * {@code name} names the port in log lines.
     */
    public static CompletionStage<ServerBinding> bind(ActorSystem<?> system, String name, String host, int port, ConnectionLimits limits,
                                                      Optional<Duration> requestTimeout, UnaryOperator<ServerSettings> adapt,
                                                      Flow<HttpRequest, HttpResponse, ?> handler) {
        ConnectionCounts counts = new ConnectionCounts(name + " " + host + ":" + port, limits);
        Flow<HttpRequest, HttpResponse, NotUsed> limited = Flow.<HttpRequest, HttpResponse, NotUsed>fromMaterializer((mat, attributes) -> {
            InetAddress client = clientOf(attributes);
            if (counts.tryOpen(client) != null) {
                return closeAtOnce();
            }
            return BidiFlow.fromGraph(new ConnectionWatch(limits, client.getHostAddress(), () -> counts.closed(client)))
                    .join(handler)
                    .mapMaterializedValue(ignored -> NotUsed.getInstance());
        }).mapMaterializedValue(ignored -> NotUsed.getInstance());
        return Http.get(system).newServerAt(host, port)
                .adaptSettings(settings -> adapt.apply(limited(settings, limits, requestTimeout)))
                .bindFlow(limited);
    }

    /** {@code settings} with the timeouts and connection count the limits need. */
    private static ServerSettings limited(ServerSettings settings, ConnectionLimits limits, Optional<Duration> requestTimeout) {
        scala.concurrent.duration.Duration answer = requestTimeout.<scala.concurrent.duration.Duration>map(LimitedBinding::scala)
                .orElse(settings.getTimeouts().requestTimeout());
        // Pekko's idle timeout counts bytes either way: it must not come before an answer still being computed, nor
        // before the header-read timeout, which is ours to apply.
        scala.concurrent.duration.Duration backstop = answer.isFinite()
                ? answer.max(scala(limits.headerReadTimeout())).plus(scala(limits.idleTimeout())) : answer;
        // Refused connections are counted by Pekko until their (immediate) close: leave room for a flood of them, so
        // that Pekko never stops accepting.
        int pekkoConnections = (int) Math.min(Integer.MAX_VALUE, 2L * limits.maxConnections() + 1024);
        return settings
                .withTimeouts(settings.getTimeouts().withRequestTimeout(answer).withIdleTimeout(backstop))
                .withMaxConnections(pekkoConnections)
                .withRemoteAddressAttribute(true);
    }

    /** A connection handler that closes the connection at once, before reading anything. */
    private static Flow<HttpRequest, HttpResponse, NotUsed> closeAtOnce() {
        return Flow.fromSinkAndSourceCoupled(Sink.<HttpRequest>cancelled(), Source.<HttpResponse>empty());
    }

    /**
     * The remote address of the connection whose handler is materialized with {@code attributes}: Pekko HTTP puts it
     * there when the remote-address attribute is on (its {@code HttpAttributes}, the one place a bound flow learns it
     * before any request arrives).
     */
    private static InetAddress clientOf(Attributes attributes) {
        Optional<HttpAttributes.RemoteAddress> remote = attributes.getAttribute(HttpAttributes.RemoteAddress.class);
        if (remote.isEmpty() || remote.get().address().getAddress() == null) {
            // Cannot happen with the pinned Pekko HTTP; counted under one address rather than not at all.
            LOG.warn("a connection's remote address is unknown; it counts against the per-client cap of 0.0.0.0");
            return UNKNOWN_CLIENT;
        }
        return remote.get().address().getAddress();
    }

    private static InetAddress unknownClient() {
        try {
            return InetAddress.getByAddress(new byte[4]);
        } catch (java.net.UnknownHostException e) {
            throw new IllegalStateException(e);
        }
    }

    private static FiniteDuration scala(Duration duration) {
        return FiniteDuration.create(duration.toNanos(), TimeUnit.NANOSECONDS);
    }
}
