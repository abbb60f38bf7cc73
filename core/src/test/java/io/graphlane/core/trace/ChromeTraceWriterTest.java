package io.graphlane.core.trace;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class ChromeTraceWriterTest {

    @Test
    void crossLaneWaitBecomesAFlowArrowBetweenTheTwoWorkSlices() {
        List<TraceEvent> events = List.of(
                TraceEvent.instant(TraceEvent.Kind.SUBMIT, "a", "a#0", 1_000),
                TraceEvent.work("a", "a#0", 2_000, 5_500, true),
                TraceEvent.waited("b", "b#1", "a#0", 1_500, 4_000),
                TraceEvent.work("b", "b#1", 6_000, 7_000, false));
        StringBuilder json = new StringBuilder();
        ChromeTraceWriter.write(events, json);

        List<Map<String, Object>> entries = traceEvents(json.toString());
        Map<String, Object> producerFlow = only(entries, "ph", "s");
        Map<String, Object> consumerFlow = only(entries, "ph", "f");
        assertEquals(producerFlow.get("id"), consumerFlow.get("id"));
        assertEquals("4.500", producerFlow.get("ts"), "arrow leaves at the producer's end, relative to the first event");
        assertEquals("5.000", consumerFlow.get("ts"), "arrow lands at the consumer's start");
        assertEquals(tidOf(entries, "lane a"), producerFlow.get("tid"));
        assertEquals(tidOf(entries, "lane b"), consumerFlow.get("tid"));

        Map<String, Object> consumerWork = only(entries, "name", "b#1");
        assertEquals("X", consumerWork.get("ph"));
        assertEquals("1.000", consumerWork.get("dur"));
        Map<String, Object> wait = only(entries, "cat", "wait");
        assertEquals(tidOf(entries, "lane b (waits)"), wait.get("tid"), "waits have their own track so slices never overlap");
    }

    @Test
    void writesToAFileAndEscapesNames(@TempDir Path dir) throws Exception {
        Path file = dir.resolve("t.json");
        int n = ChromeTraceWriter.write(List.of(TraceEvent.work("la\"ne\n", "h\\1", 10, 20, true)), file);
        String text = Files.readString(file);
        List<Map<String, Object>> entries = traceEvents(text);
        assertEquals(n, entries.size());
        assertTrue(entries.stream().anyMatch(e -> "h\\1".equals(e.get("name"))));
        assertTrue(entries.stream().anyMatch(e -> e.get("args") instanceof Map<?, ?> a && "lane la\"ne\n".equals(a.get("name"))));
    }

    @Test
    void bufferKeepsItsCapacityAndCountsTheRest() {
        TraceBuffer buffer = new TraceBuffer(2);
        for (int i = 0; i < 5; i++) {
            buffer.record(TraceEvent.instant(TraceEvent.Kind.SUBMIT, "a", "a#" + i, i));
        }
        assertEquals(List.of("a#0", "a#1"), buffer.events().stream().map(TraceEvent::handle).toList());
        assertEquals(3, buffer.dropped());
        assertFalse(TraceRecorder.DISABLED.enabled());
        assertThrows(IllegalArgumentException.class, () -> TraceEvent.work("a", "a#0", 10, 5, true));
    }

    private static Object tidOf(List<Map<String, Object>> entries, String laneName) {
        return entries.stream()
                .filter(e -> "thread_name".equals(e.get("name")) && e.get("args") instanceof Map<?, ?> a && laneName.equals(a.get("name")))
                .findFirst().orElseThrow().get("tid");
    }

    private static Map<String, Object> only(List<Map<String, Object>> entries, String key, String value) {
        List<Map<String, Object>> found = entries.stream().filter(e -> value.equals(e.get(key))).toList();
        assertEquals(1, found.size(), "entries with " + key + "=" + value + ": " + found);
        return found.get(0);
    }

    @SuppressWarnings("unchecked")
    private static List<Map<String, Object>> traceEvents(String json) {
        Object root = new Json(json).document();
        return (List<Map<String, Object>>) ((Map<String, Object>) root).get("traceEvents");
    }

    /** A strict little JSON reader (numbers kept as their text) so the test proves the output parses. */
    private static final class Json {
        private final String s;
        private int i;

        Json(String s) {
            this.s = s;
        }

        Object document() {
            Object v = value();
            ws();
            if (i != s.length()) {
                throw new IllegalStateException("trailing text at " + i);
            }
            return v;
        }

        private Object value() {
            ws();
            char c = s.charAt(i);
            if (c == '{') {
                Map<String, Object> m = new LinkedHashMap<>();
                i++;
                ws();
                if (s.charAt(i) == '}') {
                    i++;
                    return m;
                }
                while (true) {
                    ws();
                    String k = string();
                    ws();
                    expect(':');
                    m.put(k, value());
                    ws();
                    if (s.charAt(i) == ',') {
                        i++;
                    } else {
                        expect('}');
                        return m;
                    }
                }
            }
            if (c == '[') {
                List<Object> l = new ArrayList<>();
                i++;
                ws();
                if (s.charAt(i) == ']') {
                    i++;
                    return l;
                }
                while (true) {
                    l.add(value());
                    ws();
                    if (s.charAt(i) == ',') {
                        i++;
                    } else {
                        expect(']');
                        return l;
                    }
                }
            }
            if (c == '"') {
                return string();
            }
            int start = i;
            while (i < s.length() && "+-.eE0123456789truefalsn".indexOf(s.charAt(i)) >= 0) {
                i++;
            }
            String lit = s.substring(start, i);
            if (lit.equals("true") || lit.equals("false")) {
                return Boolean.valueOf(lit);
            }
            if (lit.equals("null")) {
                return null;
            }
            Double.parseDouble(lit);
            return lit;
        }

        private String string() {
            expect('"');
            StringBuilder b = new StringBuilder();
            while (true) {
                char c = s.charAt(i++);
                if (c == '"') {
                    return b.toString();
                }
                if (c < 0x20) {
                    throw new IllegalStateException("raw control character in string at " + i);
                }
                if (c == '\\') {
                    char e = s.charAt(i++);
                    switch (e) {
                        case 'n' -> b.append('\n');
                        case 'r' -> b.append('\r');
                        case 't' -> b.append('\t');
                        case 'u' -> {
                            b.append((char) Integer.parseInt(s.substring(i, i + 4), 16));
                            i += 4;
                        }
                        default -> b.append(e);
                    }
                } else {
                    b.append(c);
                }
            }
        }

        private void expect(char c) {
            if (s.charAt(i) != c) {
                throw new IllegalStateException("expected '" + c + "' at " + i + " but found '" + s.charAt(i) + "'");
            }
            i++;
        }

        private void ws() {
            while (i < s.length() && Character.isWhitespace(s.charAt(i))) {
                i++;
            }
        }
    }
}
