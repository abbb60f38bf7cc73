package io.graphlane.cli.trace;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.graphlane.core.GraphlaneException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class LaneTimelineTest {

    @Test
    void busyIsTheUnionOfOverlappingIntervalsAndBubbleTheRestOfTheWindow() {
        LaneTimeline t = new LaneTimeline(List.of(
                new LaneTimeline.Interval("a", "w1", 0, 10, true),
                new LaneTimeline.Interval("a", "w2", 5, 15, true),   // overlaps w1: counted once
                new LaneTimeline.Interval("a", "w3", 30, 40, true),
                new LaneTimeline.Interval("b", "w4", 10, 50, true)));
        assertEquals(50, t.wallUs(), 1e-9);
        LaneTimeline.LaneStats a = t.stats().get(0);
        assertEquals(25, a.busyUs(), 1e-9);
        assertEquals(25, a.bubbleUs(), 1e-9);
        assertEquals(0.5, a.busyFraction(), 1e-9);
        LaneTimeline.LaneStats b = t.stats().get(1);
        assertEquals(40, b.busyUs(), 1e-9);
        assertEquals(10, b.bubbleUs(), 1e-9);
    }

    @Test
    void readsLanesAndWorkFromAChromeTrace(@TempDir Path dir) throws Exception {
        Path trace = dir.resolve("t.json");
        Files.writeString(trace, "{\"traceEvents\":["
                + "{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":1,\"tid\":1,\"args\":{\"name\":\"lane stage-0\"}},"
                + "{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":1,\"tid\":3,\"args\":{\"name\":\"lane stage-1\"}},"
                + "{\"name\":\"stage-0#0\",\"cat\":\"work\",\"ph\":\"X\",\"pid\":1,\"tid\":1,\"ts\":0.0,\"dur\":100.0,\"args\":{\"ok\":true}},"
                + "{\"name\":\"stage-1#0\",\"cat\":\"work\",\"ph\":\"X\",\"pid\":1,\"tid\":3,\"ts\":100.0,\"dur\":100.0,\"args\":{\"ok\":false}},"
                + "{\"name\":\"stage-1#0 waits\",\"cat\":\"wait\",\"ph\":\"X\",\"pid\":1,\"tid\":4,\"ts\":0.0,\"dur\":100.0}"
                + "]}");
        LaneTimeline t = LaneTimeline.readChromeTrace(trace);
        assertEquals(List.of("stage-0", "stage-1"), t.lanes());
        assertEquals(200, t.wallUs(), 1e-9);
        assertEquals(0.5, t.stats().get(1).busyFraction(), 1e-9);
        String html = TimelineHtml.render(t, "x");
        assertTrue(html.contains("stage-1") && html.contains("#d83b3b"), "failed work is drawn in red");
    }

    @Test
    void aFileThatIsNotATraceIsRefusedByName(@TempDir Path dir) throws Exception {
        Path bad = dir.resolve("bad.json");
        Files.writeString(bad, "{\"nope\":1}");
        GraphlaneException e = assertThrows(GraphlaneException.class, () -> LaneTimeline.readChromeTrace(bad));
        assertTrue(e.getMessage().contains("bad.json") && e.getMessage().contains("traceEvents"), e.getMessage());
        GraphlaneException missing = assertThrows(GraphlaneException.class, () -> LaneTimeline.readChromeTrace(dir.resolve("none.json")));
        assertTrue(missing.getMessage().contains("does not exist"), missing.getMessage());
    }
}
