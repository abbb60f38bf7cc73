package io.graphlane.cli.bench;

import java.util.Locale;

/**
 * The figures of one {@code graphlane bench scheduler} run: each workload measured through the lane
 * actors (graphlane) and by one thread driving the bare backend (the baseline), in the same process.
 *
 * @param lanes lanes used by both paths
 * @param ops ops per lane for {@code independent}, ops in total for {@code chain}
 * @param independent the workload where each lane runs its own stream of ops
 * @param chain the workload where op i on lane i mod lanes is ordered after op i-1
 */
public record SchedulerBenchReport(int lanes, int ops, Workload independent, Workload chain) {

    /**
     * One workload's figures.
     *
     * @param graphlaneOpsPerSec ops completed per second through the lane actors
     * @param baselineOpsPerSec ops completed per second by one thread on the bare backend
     * @param handoffP50Micros median time from the end of op i-1 to the start of op i (graphlane), NaN if not measured
     * @param handoffP99Micros 99th percentile of that time (graphlane), NaN if not measured
     * @param baselineHandoffP50Micros median handoff of the baseline, NaN if not measured
     * @param baselineHandoffP99Micros 99th percentile handoff of the baseline, NaN if not measured
     */
    public record Workload(double graphlaneOpsPerSec, double baselineOpsPerSec, double handoffP50Micros, double handoffP99Micros,
                           double baselineHandoffP50Micros, double baselineHandoffP99Micros) {
        /** graphlane ÷ baseline. */
        public double ratio() {
            return graphlaneOpsPerSec / baselineOpsPerSec;
        }
    }

    /** The one JSON object {@code --json} prints (handoff figures are graphlane's). */
    public String toJson() {
        return "{\"lanes\":" + lanes + ",\"ops\":" + ops
                + ",\"independent\":{\"graphlane_ops_per_s\":" + num(independent.graphlaneOpsPerSec())
                + ",\"baseline_ops_per_s\":" + num(independent.baselineOpsPerSec()) + ",\"ratio\":" + ratio(independent) + "}"
                + ",\"chain\":{\"graphlane_ops_per_s\":" + num(chain.graphlaneOpsPerSec())
                + ",\"baseline_ops_per_s\":" + num(chain.baselineOpsPerSec()) + ",\"ratio\":" + ratio(chain)
                + ",\"handoff_p50_us\":" + micros(chain.handoffP50Micros()) + ",\"handoff_p99_us\":" + micros(chain.handoffP99Micros())
                + "}}";
    }

    /** A short table for people. */
    public String toText() {
        return String.format(Locale.ROOT,
                "graphlane bench scheduler: %d lanes, CPU backend, no-op work%n"
                        + "  independent (%d ops per lane): graphlane %,.0f ops/s, baseline %,.0f ops/s, ratio %.3f%n"
                        + "  chain (%d ops, each a cross-lane handoff): graphlane %,.0f ops/s, baseline %,.0f ops/s, ratio %.3f%n"
                        + "  chain handoff end(i-1) -> start(i): graphlane p50 %.1f us, p99 %.1f us; baseline p50 %.1f us, p99 %.1f us%n",
                lanes, ops, independent.graphlaneOpsPerSec(), independent.baselineOpsPerSec(), independent.ratio(),
                ops, chain.graphlaneOpsPerSec(), chain.baselineOpsPerSec(), chain.ratio(),
                chain.handoffP50Micros(), chain.handoffP99Micros(), chain.baselineHandoffP50Micros(), chain.baselineHandoffP99Micros());
    }

    private static String num(double v) {
        return String.format(Locale.ROOT, "%.1f", v);
    }

    private static String ratio(Workload w) {
        return String.format(Locale.ROOT, "%.4f", w.ratio());
    }

    private static String micros(double v) {
        return Double.isNaN(v) ? "null" : String.format(Locale.ROOT, "%.2f", v);
    }
}
