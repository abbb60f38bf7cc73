package io.graphlane.server;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.event.LoggingAdapter;
import org.apache.pekko.http.scaladsl.model.ErrorInfo;
import org.apache.pekko.http.scaladsl.model.StatusCodes;
import org.apache.pekko.http.scaladsl.settings.ServerSettings;
import org.junit.jupiter.api.Test;

/** A request head cut short by its connection's end is logged at debug; every other parsing error as Pekko HTTP logs it. */
class CutHeadParsingErrorHandlerTest {
    /** A log that keeps its warnings and debug lines. */
    private static final class Recorded implements LoggingAdapter {
        final List<String> warnings = new CopyOnWriteArrayList<>();
        final List<String> debug = new CopyOnWriteArrayList<>();

        @Override public boolean isErrorEnabled() { return true; }
        @Override public boolean isWarningEnabled() { return true; }
        @Override public boolean isInfoEnabled() { return true; }
        @Override public boolean isDebugEnabled() { return true; }
        @Override public void notifyError(String message) { warnings.add(message); }
        @Override public void notifyError(Throwable cause, String message) { warnings.add(message); }
        @Override public void notifyWarning(String message) { warnings.add(message); }
        @Override public void notifyInfo(String message) { }
        @Override public void notifyDebug(String message) { debug.add(message); }
    }

    @Test
    void aCutHeadIsLoggedAtDebugAndOtherErrorsAsBefore() {
        ActorTestKit testKit = ActorTestKit.create();
        try {
            ServerSettings settings = (ServerSettings) org.apache.pekko.http.javadsl.settings.ServerSettings.create(testKit.system().classicSystem());
            CutHeadParsingErrorHandler handler = new CutHeadParsingErrorHandler();
            Recorded log = new Recorded();
            handler.handle(StatusCodes.BadRequest(), new ErrorInfo(CutHeadParsingErrorHandler.CUT_HEAD, ""), log, settings);
            assertEquals(List.of(), log.warnings, "a head cut by the header-read timeout is no warning");
            assertEquals(1, log.debug.size());
            handler.handle(StatusCodes.NotImplemented(), new ErrorInfo("Unsupported HTTP method: BREW", ""), log, settings);
            assertEquals(1, log.warnings.size(), "any other parsing error is a warning, as Pekko HTTP logs it: " + log.warnings);
        } finally {
            testKit.shutdownTestKit();
        }
    }
}
