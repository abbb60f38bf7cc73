package io.graphlane.cli.trace;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.graphlane.core.GraphlaneException;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The work intervals of each lane of one run, and what they add up to: per lane, busy time
 * is the union of its work intervals and bubble time is the rest of the window in which the
 * run held work (from the first work start to the last work end on any lane).
 */
public final class LaneTimeline {

    /** One piece of work on one lane, in microseconds from the trace's origin. */
    public record Interval(String lane, String name, double startUs, double endUs, boolean ok) { }

    /** Busy and bubble time of one lane. */
    public record LaneStats(String lane, int workItems, double busyUs, double bubbleUs, double busyFraction) { }

    private final Map<String, List<Interval>> byLane = new LinkedHashMap<>();
    private final double windowStartUs;
    private final double windowEndUs;

    public LaneTimeline(List<Interval> intervals) {
        double start = Double.MAX_VALUE;
        double end = -Double.MAX_VALUE;
        for (Interval i : intervals) {
            byLane.computeIfAbsent(i.lane(), k -> new ArrayList<>()).add(i);
            start = Math.min(start, i.startUs());
            end = Math.max(end, i.endUs());
        }
        byLane.values().forEach(l -> l.sort(Comparator.comparingDouble(Interval::startUs)));
        this.windowStartUs = intervals.isEmpty() ? 0 : start;
        this.windowEndUs = intervals.isEmpty() ? 0 : end;
    }

    /** The work intervals among {@code events} recorded by lane actors (times relative to the earliest event). */
    public static LaneTimeline fromEvents(List<io.graphlane.core.trace.TraceEvent> events) {
        long origin = Long.MAX_VALUE;
        for (io.graphlane.core.trace.TraceEvent e : events) {
            origin = Math.min(origin, e.startNanos());
        }
        List<Interval> intervals = new ArrayList<>();
        for (io.graphlane.core.trace.TraceEvent e : events) {
            if (e.kind() == io.graphlane.core.trace.TraceEvent.Kind.WORK) {
                intervals.add(new Interval(e.lane(), e.handle(), (e.startNanos() - origin) / 1e3, (e.endNanos() - origin) / 1e3, e.ok()));
            }
        }
        return new LaneTimeline(intervals);
    }

    /**
     * Reads the work intervals of a Chrome trace-event JSON file written by graphlane's {@code --trace}.
     *
     * @throws GraphlaneException naming the file if it is missing, not JSON, or holds no trace events
     */
    public static LaneTimeline readChromeTrace(Path file) {
        JsonNode root;
        try {
            root = new ObjectMapper().readTree(Files.readAllBytes(file));
        } catch (NoSuchFileException e) {
            throw new GraphlaneException("trace file " + file + " does not exist");
        } catch (IOException e) {
            throw new GraphlaneException("trace file " + file + " is not a JSON trace: " + firstLine(e.getMessage()));
        }
        JsonNode events = root == null ? null : root.isArray() ? root : root.get("traceEvents");
        if (events == null || !events.isArray()) {
            throw new GraphlaneException("trace file " + file + " has no \"traceEvents\" array; write one with --trace FILE");
        }
        Map<String, String> laneOfTid = new HashMap<>();
        for (JsonNode e : events) {
            if ("M".equals(e.path("ph").asText()) && "thread_name".equals(e.path("name").asText())) {
                laneOfTid.put(e.path("pid").asText() + "/" + e.path("tid").asText(), e.path("args").path("name").asText());
            }
        }
        List<Interval> intervals = new ArrayList<>();
        for (JsonNode e : events) {
            if (!"X".equals(e.path("ph").asText()) || !"work".equals(e.path("cat").asText())) {
                continue;
            }
            String key = e.path("pid").asText() + "/" + e.path("tid").asText();
            String lane = laneOfTid.getOrDefault(key, "thread " + e.path("tid").asText());
            if (lane.startsWith("lane ")) {
                lane = lane.substring("lane ".length());
            }
            double start = e.path("ts").asDouble();
            intervals.add(new Interval(lane, e.path("name").asText(), start, start + e.path("dur").asDouble(),
                    e.path("args").path("ok").asBoolean(true)));
        }
        return new LaneTimeline(intervals);
    }

    /** The lanes, in order of first appearance. */
    public List<String> lanes() {
        return List.copyOf(byLane.keySet());
    }

    public List<Interval> intervals(String lane) {
        return List.copyOf(byLane.getOrDefault(lane, List.of()));
    }

    public double windowStartUs() {
        return windowStartUs;
    }

    /** The length of the window in which the run held work. */
    public double wallUs() {
        return windowEndUs - windowStartUs;
    }

    /** Busy and bubble time of every lane. */
    public List<LaneStats> stats() {
        List<LaneStats> out = new ArrayList<>();
        double wall = wallUs();
        for (Map.Entry<String, List<Interval>> lane : byLane.entrySet()) {
            double busy = unionLength(lane.getValue());
            out.add(new LaneStats(lane.getKey(), lane.getValue().size(), busy, Math.max(0, wall - busy), wall > 0 ? busy / wall : 0));
        }
        return out;
    }

    /** The length of the union of intervals sorted by start. */
    static double unionLength(List<Interval> sorted) {
        double total = 0;
        double curStart = Double.NaN;
        double curEnd = Double.NaN;
        for (Interval i : sorted) {
            if (Double.isNaN(curStart) || i.startUs() > curEnd) {
                if (!Double.isNaN(curStart)) {
                    total += curEnd - curStart;
                }
                curStart = i.startUs();
                curEnd = i.endUs();
            } else {
                curEnd = Math.max(curEnd, i.endUs());
            }
        }
        if (!Double.isNaN(curStart)) {
            total += curEnd - curStart;
        }
        return total;
    }

    private static String firstLine(String s) {
        if (s == null) {
            return "";
        }
        int nl = s.indexOf('\n');
        return nl < 0 ? s : s.substring(0, nl);
    }
}
