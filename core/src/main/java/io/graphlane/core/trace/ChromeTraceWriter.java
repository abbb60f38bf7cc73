package io.graphlane.core.trace;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * Writes trace events as Chrome trace-event JSON (the "JSON Object Format"), which Perfetto
 * and {@code chrome://tracing} open. Each lane gets one track for its work and one for the
 * waits of its accepted work; a wait for a producer on another lane becomes a flow arrow
 * from the end of the producer's work to the start of the consumer's work.
 */
public final class ChromeTraceWriter {
    private static final int PID = 1;

    private ChromeTraceWriter() {
    }

    /** Writes {@code events} to {@code file} (replacing it) and returns the number of trace entries written. */
    public static int write(List<TraceEvent> events, Path file) {
        try (Writer out = Files.newBufferedWriter(file, StandardCharsets.UTF_8)) {
            return write(events, out);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write trace file " + file + ": " + e.getMessage(), e);
        }
    }

    /** Writes {@code events} as one JSON object to {@code out} and returns the number of trace entries written. */
    public static int write(List<TraceEvent> events, Appendable out) {
        try {
            return new Emitter(events, out).emit();
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write trace: " + e.getMessage(), e);
        }
    }

    private static final class Emitter {
        private final List<TraceEvent> events;
        private final Appendable out;
        private final Map<String, Integer> laneTids = new LinkedHashMap<>();
        private final Map<String, TraceEvent> workByHandle = new HashMap<>();
        private final long origin;
        private int written;

        Emitter(List<TraceEvent> events, Appendable out) {
            this.events = events;
            this.out = out;
            long min = Long.MAX_VALUE;
            for (TraceEvent e : events) {
                min = Math.min(min, e.startNanos());
                laneTids.computeIfAbsent(e.lane(), k -> 2 * laneTids.size() + 1);
                if (e.kind() == TraceEvent.Kind.WORK) {
                    workByHandle.put(e.handle(), e);
                }
            }
            this.origin = min == Long.MAX_VALUE ? 0 : min;
        }

        int emit() throws IOException {
            out.append("{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n");
            entry("{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":" + PID + ",\"args\":{\"name\":\"graphlane\"}}");
            for (Map.Entry<String, Integer> lane : laneTids.entrySet()) {
                int tid = lane.getValue();
                meta(tid, "lane " + lane.getKey());
                meta(tid + 1, "lane " + lane.getKey() + " (waits)");
            }
            int flow = 0;
            for (TraceEvent e : events) {
                int tid = laneTids.get(e.lane());
                switch (e.kind()) {
                    case WORK -> entry("{\"name\":" + str(e.handle()) + ",\"cat\":\"work\",\"ph\":\"X\",\"pid\":" + PID
                            + ",\"tid\":" + tid + ",\"ts\":" + ts(e.startNanos()) + ",\"dur\":" + dur(e)
                            + ",\"args\":{\"ok\":" + e.ok() + "}}");
                    case SUBMIT, DROP -> entry("{\"name\":" + str((e.kind() == TraceEvent.Kind.SUBMIT ? "submit " : "dropped ")
                            + e.handle()) + ",\"cat\":\"" + e.kind().name().toLowerCase(Locale.ROOT) + "\",\"ph\":\"i\",\"s\":\"t\",\"pid\":"
                            + PID + ",\"tid\":" + tid + ",\"ts\":" + ts(e.startNanos()) + "}");
                    case WAIT -> {
                        entry("{\"name\":" + str(e.handle() + " waits for " + e.related()) + ",\"cat\":\"wait\",\"ph\":\"X\",\"pid\":"
                                + PID + ",\"tid\":" + (tid + 1) + ",\"ts\":" + ts(e.startNanos()) + ",\"dur\":" + dur(e) + "}");
                        TraceEvent producer = workByHandle.get(e.related());
                        TraceEvent consumer = workByHandle.get(e.handle());
                        if (producer != null && consumer != null) {
                            flow++;
                            entry("{\"name\":\"handoff\",\"cat\":\"flow\",\"ph\":\"s\",\"id\":" + flow + ",\"pid\":" + PID
                                    + ",\"tid\":" + laneTids.get(producer.lane()) + ",\"ts\":" + ts(producer.endNanos()) + "}");
                            entry("{\"name\":\"handoff\",\"cat\":\"flow\",\"ph\":\"f\",\"bp\":\"e\",\"id\":" + flow + ",\"pid\":" + PID
                                    + ",\"tid\":" + tid + ",\"ts\":" + ts(consumer.startNanos()) + "}");
                        }
                    }
                    default -> throw new IllegalStateException("unknown trace event kind " + e.kind());
                }
            }
            out.append("\n]}\n");
            return written;
        }

        private void meta(int tid, String name) throws IOException {
            entry("{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":" + PID + ",\"tid\":" + tid + ",\"args\":{\"name\":" + str(name) + "}}");
            entry("{\"name\":\"thread_sort_index\",\"ph\":\"M\",\"pid\":" + PID + ",\"tid\":" + tid
                    + ",\"args\":{\"sort_index\":" + tid + "}}");
        }

        private void entry(String json) throws IOException {
            if (written > 0) {
                out.append(",\n");
            }
            out.append(json);
            written++;
        }

        private String ts(long nanos) {
            return micros(nanos - origin);
        }

        private static String dur(TraceEvent e) {
            return micros(e.endNanos() - e.startNanos());
        }

        private static String micros(long nanos) {
            return (nanos / 1000) + "." + String.format(Locale.ROOT, "%03d", nanos % 1000);
        }
    }

    /** {@code s} as a JSON string literal. */
    static String str(String s) {
        StringBuilder b = new StringBuilder(s.length() + 2).append('"');
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            switch (c) {
                case '"' -> b.append("\\\"");
                case '\\' -> b.append("\\\\");
                case '\n' -> b.append("\\n");
                case '\r' -> b.append("\\r");
                case '\t' -> b.append("\\t");
                default -> {
                    if (c < 0x20) {
                        b.append(String.format(Locale.ROOT, "\\u%04x", (int) c));
                    } else {
                        b.append(c);
                    }
                }
            }
        }
        return b.append('"').toString();
    }
}
