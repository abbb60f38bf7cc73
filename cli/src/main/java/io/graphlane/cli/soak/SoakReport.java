package io.graphlane.cli.soak;

import java.util.ArrayList;
import java.util.List;

/**
 * The totals of a soak.
 *
 * @param scenarios scenarios run
 * @param failures scenarios that broke at least one law
 * @param leaks values and leases never released (or leaked although their completion was proven)
 * @param earlyReleases releases before the exact completion, second releases, and frees of unproven values
 * @param hangs scenarios that did not end within their budget
 * @param seconds wall time of the whole soak
 * @param firstFailingSeed the seed of the first failing scenario, or null
 * @param firstProblems what that scenario broke (at most a few lines)
 */
public record SoakReport(int scenarios, int failures, long leaks, long earlyReleases, int hangs, double seconds,
                         Long firstFailingSeed, List<String> firstProblems) {

    /** Whether every scenario kept every law. */
    public boolean clean() {
        return failures == 0;
    }

    /** The report as one JSON object. */
    public String toJson() {
        StringBuilder b = new StringBuilder("{");
        b.append("\"scenarios\":").append(scenarios)
                .append(",\"failures\":").append(failures)
                .append(",\"leaks\":").append(leaks)
                .append(",\"early_releases\":").append(earlyReleases)
                .append(",\"hangs\":").append(hangs)
                .append(",\"seconds\":").append(String.format(java.util.Locale.ROOT, "%.3f", seconds))
                .append(",\"first_failing_seed\":").append(firstFailingSeed == null ? "null" : Long.toString(firstFailingSeed))
                .append(",\"first_problems\":[");
        for (int i = 0; i < firstProblems.size(); i++) {
            b.append(i == 0 ? "" : ",").append(quote(firstProblems.get(i)));
        }
        return b.append("]}").toString();
    }

    /** A short text summary. */
    public String toText() {
        StringBuilder b = new StringBuilder();
        b.append(String.format(java.util.Locale.ROOT, "%d scenarios in %.1f s: %d failures (%d leaks, %d early releases, %d hangs)%n",
                scenarios, seconds, failures, leaks, earlyReleases, hangs));
        if (firstFailingSeed != null) {
            b.append("first failing scenario: seed ").append(firstFailingSeed)
                    .append(" (replay: graphlane soak --scenarios 1 --seed ").append(firstFailingSeed).append(")\n");
            firstProblems.forEach(p -> b.append("  ").append(p).append('\n'));
        }
        return b.toString();
    }

    private static String quote(String s) {
        StringBuilder b = new StringBuilder("\"");
        for (char c : s.toCharArray()) {
            switch (c) {
                case '"' -> b.append("\\\"");
                case '\\' -> b.append("\\\\");
                case '\n' -> b.append("\\n");
                case '\r' -> b.append("\\r");
                case '\t' -> b.append("\\t");
                default -> {
                    if (c < 0x20) {
                        b.append(String.format("\\u%04x", (int) c));
                    } else {
                        b.append(c);
                    }
                }
            }
        }
        return b.append('"').toString();
    }

    /** Adds scenario results up. */
    static final class Builder {
        private static final int PROBLEM_LINES = 5;
        private int scenarios;
        private int failures;
        private long leaks;
        private long early;
        private int hangs;
        private Long firstSeed;
        private List<String> firstProblems = List.of();

        void add(ScenarioResult r) {
            scenarios++;
            leaks += r.leaks();
            early += r.earlyReleases();
            hangs += r.hang() ? 1 : 0;
            if (r.failed()) {
                failures++;
                if (firstSeed == null) {
                    firstSeed = r.seed();
                    firstProblems = new ArrayList<>(r.problems().subList(0, Math.min(PROBLEM_LINES, r.problems().size())));
                    r.notes().forEach(n -> firstProblems.add("note: " + n));
                }
            }
        }

        SoakReport build(double seconds) {
            return new SoakReport(scenarios, failures, leaks, early, hangs, seconds, firstSeed, List.copyOf(firstProblems));
        }
    }
}
