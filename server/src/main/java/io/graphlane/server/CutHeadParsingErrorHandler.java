package io.graphlane.server;

import org.apache.pekko.event.LoggingAdapter;
import org.apache.pekko.http.DefaultParsingErrorHandler;
import org.apache.pekko.http.ParsingErrorHandler;
import org.apache.pekko.http.javadsl.model.HttpResponse;
import org.apache.pekko.http.scaladsl.model.ErrorInfo;
import org.apache.pekko.http.scaladsl.model.StatusCode;
import org.apache.pekko.http.scaladsl.settings.ServerSettings;

/**
 * Pekko HTTP's handling of request parsing errors, except for a request head cut short by the end of its connection:
 * that is what closing a connection for its header-read timeout leaves behind ({@link ConnectionWatch}), and Pekko HTTP
 * would log each one as an illegal request (a flood of tricklers, a flood of warnings). Those are logged at debug.
 * Instantiated by Pekko HTTP from its class name ({@code parsing-error-handler}).
 */
public final class CutHeadParsingErrorHandler extends ParsingErrorHandler {
    /** Pekko HTTP's summary when a connection ends inside a request head: the only error it gives that summary. */
    static final String CUT_HEAD = "Illegal HTTP message start";

    @Override
    public HttpResponse handle(StatusCode status, ErrorInfo error, LoggingAdapter log, ServerSettings settings) {
        if (CUT_HEAD.equals(error.summary())) {
            log.debug("a connection ended inside a request head: {}", error.summary());
            // Never sent: the connection is gone.
            return HttpResponse.create().withStatus(status).withEntity(error.summary());
        }
        return DefaultParsingErrorHandler.handle(status, error, log, settings);
    }
}
