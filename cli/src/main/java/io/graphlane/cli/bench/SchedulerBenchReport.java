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
     * @param graphlaneCpuNanosPerOp process CPU time per op through the lane actors (every thread) over all rounds, NaN
     *                               when the rounds took less CPU than the clock's tick (10 ms)
     * @param baselineCpuNanosPerOp process CPU time per op on the bare backend over all rounds, NaN likewise
     * @param handoffP50Micros median time from the end of op i-1 to the start of op i (graphlane), NaN if not measured
     * @param handoffP99Micros 99th percentile of that time (graphlane), NaN if not measured
     * @param baselineHandoffP50Micros median handoff of the baseline, NaN if not measured
     * @param baselineHandoffP99Micros 99th percentile handoff of the baseline, NaN if not measured
     */
    public record Workload(double graphlaneOpsPerSec, double baselineOpsPerSec, double graphlaneCpuNanosPerOp,
                           double baselineCpuNanosPerOp, double handoffP50Micros, double handoffP99Micros,
                           double baselineHandoffP50Micros, double baselineHandoffP99Micros) {
        /** graphlane ÷ baseline. */
        public double ratio() {
            return graphlaneOpsPerSec / baselineOpsPerSec;
        }

        /** CPU per op through the lane actors ÷ CPU per op on the bare backend: the actor layer's cost, steady on a busy machine. */
        public double cpuRatio() {
            return graphlaneCpuNanosPerOp / baselineCpuNanosPerOp;
        }
    }

    /** The one JSON object {@code --json} prints (handoff figures are graphlane's). */
    public String toJson() {
        return "{\"lanes\":" + lanes + ",\"ops\":" + ops
                + ",\"independent\":{\"graphlane_ops_per_s\":" + num(independent.graphlaneOpsPerSec())
                + ",\"baseline_ops_per_s\":" + num(independent.baselineOpsPerSec()) + ",\"ratio\":" + ratio(independent)
                + cpu(independent) + "}"
                + ",\"chain\":{\"graphlane_ops_per_s\":" + num(chain.graphlaneOpsPerSec())
                + ",\"baseline_ops_per_s\":" + num(chain.baselineOpsPerSec()) + ",\"ratio\":" + ratio(chain) + cpu(chain)
                + ",\"handoff_p50_us\":" + micros(chain.handoffP50Micros()) + ",\"handoff_p99_us\":" + micros(chain.handoffP99Micros())
                + "}}";
    }

    /** A short table for people. */
    public String toText() {
        return String.format(Locale.ROOT,
                "graphlane bench scheduler: %d lanes, CPU backend, no-op work%n"
                        + "  independent (%d ops per lane): graphlane %,.0f ops/s, baseline %,.0f ops/s, ratio %.3f;"
                        + " CPU per op graphlane %.0f ns, baseline %.0f ns, ratio %.2f%n"
                        + "  chain (%d ops, each a cross-lane handoff): graphlane %,.0f ops/s, baseline %,.0f ops/s, ratio %.3f;"
                        + " CPU per op graphlane %.0f ns, baseline %.0f ns, ratio %.2f%n"
                        + "  chain handoff end(i-1) -> start(i): graphlane p50 %.1f us, p99 %.1f us; baseline p50 %.1f us, p99 %.1f us%n",
                lanes, ops, independent.graphlaneOpsPerSec(), independent.baselineOpsPerSec(), independent.ratio(),
                independent.graphlaneCpuNanosPerOp(), independent.baselineCpuNanosPerOp(), independent.cpuRatio(),
                ops, chain.graphlaneOpsPerSec(), chain.baselineOpsPerSec(), chain.ratio(),
                chain.graphlaneCpuNanosPerOp(), chain.baselineCpuNanosPerOp(), chain.cpuRatio(),
                chain.handoffP50Micros(), chain.handoffP99Micros(), chain.baselineHandoffP50Micros(), chain.baselineHandoffP99Micros());
    }

    private static String num(double v) {
        return String.format(Locale.ROOT, "%.1f", v);
    }

    private static String ratio(Workload w) {
        return ratio(w.ratio());
    }

    private static String ratio(double v) {
        return String.format(Locale.ROOT, "%.4f", v);
    }

    private static String cpu(Workload w) {
        double ratio = w.cpuRatio();
        return ",\"graphlane_cpu_ns_per_op\":" + numOrNull(w.graphlaneCpuNanosPerOp()) + ",\"baseline_cpu_ns_per_op\":"
                + numOrNull(w.baselineCpuNanosPerOp()) + ",\"cpu_ratio\":" + (Double.isFinite(ratio) ? ratio(ratio) : "null");
    }

    /** A CPU figure, or null when the run was too short for the process CPU clock to measure it. */
    private static String numOrNull(double v) {
        return Double.isFinite(v) ? num(v) : "null";
    }

    private static String micros(double v) {
        return Double.isNaN(v) ? "null" : String.format(Locale.ROOT, "%.2f", v);
    }
}
