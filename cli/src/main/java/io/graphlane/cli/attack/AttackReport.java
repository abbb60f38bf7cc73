package io.graphlane.cli.attack;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.List;
import java.util.Locale;
import java.util.OptionalLong;

/**
 * The outcome of {@code graphlane attack}: every attack sent, what the target did, and the totals a run is judged by.
 *
 * @param rounds how many times the whole suite ran
 * @param seconds the run's length
 * @param attacks every attack of every round, in order
 * @param peakRssBytes the target's largest resident set sampled during the run, when its process is known
 * @param lifetimePeakRssBytes the target's peak resident set over its life ({@code VmHWM}) at the end, when known
 */
public record AttackReport(int rounds, double seconds, List<AttackResult> attacks, OptionalLong peakRssBytes,
                           OptionalLong lifetimePeakRssBytes) {

    /** Requests and connections sent, all attacks together. */
    public int attacksSent() {
        return attacks.stream().mapToInt(AttackResult::sent).sum();
    }

    /** Attacks after which the target was gone. */
    public long serverCrashes() {
        return attacks.stream().filter(AttackResult::crashed).count();
    }

    /** Follow-up checks that failed. */
    public long failedFollowUps() {
        return attacks.stream().mapToLong(a -> a.followUpFailures().size()).sum();
    }

    /** Wrong answers to the attacks themselves (a 5xx where a 4xx was due, no answer, a health check that timed out). */
    public long problems() {
        return attacks.stream().mapToLong(a -> a.problems().size()).sum();
    }

    /** Whether the target held up under every attack. */
    public boolean passed() {
        return attacks.stream().allMatch(AttackResult::held);
    }

    /** One JSON object. */
    public String toJson() {
        ObjectNode o = JsonNodeFactory.instance.objectNode();
        o.put("rounds", rounds);
        o.put("seconds", Math.round(seconds * 10) / 10.0);
        o.put("attacks_sent", attacksSent());
        o.put("server_crashes", serverCrashes());
        o.put("failed_follow_ups", failedFollowUps());
        o.put("problems", problems());
        putMb(o, "peak_rss_mb", peakRssBytes);
        putMb(o, "lifetime_peak_rss_mb", lifetimePeakRssBytes);
        o.put("passed", passed());
        ArrayNode list = o.putArray("attacks");
        for (AttackResult a : attacks) {
            ObjectNode n = list.addObject();
            n.put("name", a.name());
            n.put("sent", a.sent());
            n.put("held", a.held());
            n.put("crashed", a.crashed());
            n.put("seconds", Math.round(a.seconds() * 100) / 100.0);
            a.problems().forEach(n.putArray("problems")::add);
            a.followUpFailures().forEach(n.putArray("follow_up_failures")::add);
        }
        return o.toString();
    }

    /** A table, one line per attack, then the totals. */
    public String toText() {
        StringBuilder b = new StringBuilder();
        for (AttackResult a : attacks) {
            b.append(String.format(Locale.ROOT, "%-32s %6d sent  %-6s %6.1f s%n", a.name(), a.sent(), a.held() ? "held" : "FAILED", a.seconds()));
            a.problems().forEach(p -> b.append("    ").append(p).append('\n'));
            a.followUpFailures().forEach(p -> b.append("    follow-up: ").append(p).append('\n'));
        }
        b.append(String.format(Locale.ROOT, "%d rounds in %.1f s: %d attacks sent, %d server crashes, %d failed follow-ups, %d problems",
                rounds, seconds, attacksSent(), serverCrashes(), failedFollowUps(), problems()));
        peakRssBytes.ifPresent(p -> b.append(String.format(Locale.ROOT, ", peak RSS %.0f MB", p / 1048576.0)));
        return b.append(passed() ? "\n" : "\nFAILED\n").toString();
    }

    private static void putMb(ObjectNode o, String field, OptionalLong bytes) {
        if (bytes.isPresent()) {
            o.put(field, Math.round(bytes.getAsLong() / 1048576.0 * 10) / 10.0);
        } else {
            o.putNull(field);
        }
    }
}
