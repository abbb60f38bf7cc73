package io.graphlane.server;

import java.util.List;

/**
 * Finds the first stop string in a stream of generated text and releases only text that can no longer become part
 * of one: after each piece it holds back the longest suffix of the text seen that is a prefix of some stop string,
 * so a streamed response never shows a stop string's beginning that a later token completes. Works on UTF-16 text
 * as decoded (a stop string never begins with half a surrogate pair, so a held suffix never splits a character).
 * One instance per choice; not thread-safe.
 */
final class StopMatcher {
    private final List<String> stops;
    private final StringBuilder held = new StringBuilder();
    private boolean stopped;

    /** A matcher for {@code stops} (non-empty strings; may be empty: then all text passes at once). */
    StopMatcher(List<String> stops) {
        for (String s : stops) {
            if (s.isEmpty()) {
                throw new IllegalArgumentException("a stop string must not be empty");
            }
        }
        this.stops = List.copyOf(stops);
    }

    /**
     * Adds {@code text} and returns what may be shown now: everything before a stop string once one occurs (then
     * {@link #stopped()} is true and later text is ignored), else everything but the held-back suffix.
     */
    String offer(String text) {
        if (stopped) {
            return "";
        }
        if (stops.isEmpty()) {
            return text;
        }
        held.append(text);
        int first = -1;
        for (String stop : stops) {
            int at = held.indexOf(stop);
            if (at >= 0 && (first < 0 || at < first)) {
                first = at;
            }
        }
        if (first >= 0) {
            stopped = true;
            String out = held.substring(0, first);
            held.setLength(0);
            return out;
        }
        int keep = longestSuffixThatStartsAStop();
        String out = held.substring(0, held.length() - keep);
        held.delete(0, held.length() - keep);
        return out;
    }

    /** The text still held back, released because no more text comes; empty once a stop string matched. */
    String flush() {
        String out = held.toString();
        held.setLength(0);
        return out;
    }

    /** Whether a stop string occurred. */
    boolean stopped() {
        return stopped;
    }

    private int longestSuffixThatStartsAStop() {
        int best = 0;
        for (String stop : stops) {
            int max = Math.min(stop.length() - 1, held.length());
            for (int len = max; len > best; len--) {
                if (endsWithPrefix(stop, len)) {
                    best = len;
                    break;
                }
            }
        }
        return best;
    }

    /** Whether the held text ends with the first {@code len} characters of {@code stop}. */
    private boolean endsWithPrefix(String stop, int len) {
        int from = held.length() - len;
        for (int i = 0; i < len; i++) {
            if (held.charAt(from + i) != stop.charAt(i)) {
                return false;
            }
        }
        return true;
    }
}
