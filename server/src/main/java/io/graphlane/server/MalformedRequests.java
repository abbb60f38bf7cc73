package io.graphlane.server;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.pekko.event.LoggingAdapter;
import org.apache.pekko.http.ParsingErrorHandler;
import org.apache.pekko.http.javadsl.model.ContentTypes;
import org.apache.pekko.http.javadsl.model.HttpResponse;
import org.apache.pekko.http.scaladsl.model.ErrorInfo;
import org.apache.pekko.http.scaladsl.model.StatusCode;
import org.apache.pekko.http.scaladsl.settings.ServerSettings;
import org.slf4j.LoggerFactory;

/**
 * What Pekko HTTP answers a request too malformed to reach the routes (a bad request line or target, broken framing,
 * a header section too large): OpenAI's error shape with the parser's summary, and a warning at most every 10 s with a
 * count of the others, instead of Pekko's own warning for every such request. A request head cut short by the end of
 * its connection is logged at debug only: that is what closing a connection for its header-read timeout leaves behind
 * ({@link ConnectionWatch}), and a flood of tricklers must not become a flood of warnings. Named by this module's
 * {@code reference.conf} as {@code pekko.http.server.parsing.error-handler}.
 */
public final class MalformedRequests extends ParsingErrorHandler {
    /**
     * Shared by every instance: Pekko makes one handler per connection, and a client opening connection after
     * connection must not get a warning each.
     */
    static final RateLimitedWarnings WARNINGS = new RateLimitedWarnings(LoggerFactory.getLogger(MalformedRequests.class),
            RateLimitedWarnings.DEFAULT_INTERVAL, System::nanoTime);
    private static final ObjectMapper JSON = new ObjectMapper();
    /** Pekko HTTP's summary when a connection ends inside a request head: the only error it gives that summary. */
    static final String CUT_HEAD = "Illegal HTTP message start";
    private static final org.slf4j.Logger LOG = LoggerFactory.getLogger(MalformedRequests.class);

    /** Made by Pekko HTTP from the configured class name. */
    public MalformedRequests() {
    }

    @Override
    public HttpResponse handle(StatusCode status, ErrorInfo info, LoggingAdapter log, ServerSettings settings) {
        if (CUT_HEAD.equals(info.summary())) {
            // Never sent: the connection is gone.
            LOG.debug("a connection ended inside a request head: {}", info.summary());
        } else {
            WARNINGS.warn("malformed HTTP request answered " + status.intValue() + ": " + info.summary(), null);
        }
        ObjectNode body = JSON.createObjectNode();
        ObjectNode error = body.putObject("error");
        error.put("message", info.summary());
        error.put("type", "invalid_request_error");
        error.putNull("param");
        error.putNull("code");
        return HttpResponse.create().withStatus(status).withEntity(ContentTypes.APPLICATION_JSON, body.toString());
    }
}
