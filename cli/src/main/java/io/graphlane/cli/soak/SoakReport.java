package io.graphlane.cli.soak;

import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
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
        ObjectNode o = JsonNodeFactory.instance.objectNode();
        o.put("scenarios", scenarios);
        o.put("failures", failures);
        o.put("leaks", leaks);
        o.put("early_releases", earlyReleases);
        o.put("hangs", hangs);
        o.put("seconds", Math.round(seconds * 1000) / 1000.0);
        if (firstFailingSeed == null) {
            o.putNull("first_failing_seed");
        } else {
            o.put("first_failing_seed", firstFailingSeed);
        }
        firstProblems.forEach(o.putArray("first_problems")::add);
        return o.toString();
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
