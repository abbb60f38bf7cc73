package io.graphlane.cli;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.graphlane.cli.sim.SimPipeline;
import io.graphlane.cli.sim.SimOffloadProgram;
import io.graphlane.cli.sim.SimStageProgram;
import io.graphlane.inference.offload.OffloadPlan;
import io.graphlane.inference.offload.TransferSubmissions;
import io.graphlane.testkit.sim.SimBackend;
import io.graphlane.testkit.sim.SimCompletion;
import io.graphlane.testkit.sim.SimExecutor;
import io.graphlane.testkit.sim.SimTransferBackend;
import io.graphlane.testkit.sim.SimWork;
import io.graphlane.cli.trace.LaneTimeline;
import io.graphlane.core.trace.TraceBuffer;
import io.graphlane.core.trace.TraceRecorder;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import io.graphlane.scheduler.pipeline.PipelineSettings;

/** {@code graphlane run --backend sim}: the pipeline on the simulated device, with byte tokens and placeholder outputs. */
final class SimRun {
    /** The simulated model a budget applies to: 8 layers of 64 MiB per stage, 0.5 ms of compute each, copies at 25 GB/s. */
    private static final int LAYERS_PER_STAGE = 8;
    private static final long LAYER_BYTES = 64L << 20;

    private SimRun() {
    }

    /**
     * With {@code --device-weights-budget}: the simulated layers under the budget's plan (printed), streamed layers
     * promoted on each stage's transfer lane.
     */
    private static SimPipeline offloaded(RunCommand c, TraceRecorder recorder) {
        List<long[]> layers = new ArrayList<>();
        for (int i = 0; i < c.stages; i++) {
            long[] bytes = new long[LAYERS_PER_STAGE];
            java.util.Arrays.fill(bytes, LAYER_BYTES);
            layers.add(bytes);
        }
        OffloadPlan plan = OffloadPlan.plan(c.deviceWeights.budgetBytes(), 0, layers, c.deviceWeights.lookahead);
        plan.describe().forEach(line -> c.err().println("graphlane: " + line));
        SimBackend device = SimBackend.create();
        SimTransferBackend transfer = new SimTransferBackend(device, Duration.ofNanos(20_000), 25e9, Long.MAX_VALUE);
        TransferSubmissions<SimExecutor, SimCompletion, SimWork> submissions = SimOffloadProgram.submissions(device);
        SimOffloadProgram program = new SimOffloadProgram(plan, Duration.ofNanos(500_000), transfer, submissions, 256);
        return new SimPipeline(program, device, b -> submissions, PipelineSettings.defaults(c.stages).withMaxInFlightBatches(1), recorder);
    }

    static int run(RunCommand c) throws Exception {
        List<int[]> prompts = new ArrayList<>();
        for (String text : c.prompts) {
            prompts.add(bytes(text));
        }
        for (String ids : c.promptIds) {
            prompts.add(RunCommand.parseIds(ids).stream().mapToInt(Integer::intValue).toArray());
        }
        if (prompts.isEmpty()) {
            RunCommand.DEFAULT_PROMPTS.forEach(t -> prompts.add(bytes(t)));
        }
        TraceRecorder recorder = c.trace.enabled() ? c.trace.recorder() : new TraceBuffer(TraceOptions.DEFAULT_CAPACITY);
        List<SimPipeline.Result> results;
        long start = System.nanoTime();
        try (SimPipeline sim = c.deviceWeights.isSet() ? offloaded(c, recorder)
                : new SimPipeline(new SimStageProgram(c.stages, Duration.ofMillis(2), Duration.ofNanos(50_000), 256),
                        PipelineSettings.defaults(c.stages), recorder)) {
            results = sim.runAll(prompts, c.maxNewTokens);
        }
        double wall = (System.nanoTime() - start) / 1e9;
        int generated = results.stream().mapToInt(r -> r.tokens().size()).sum();
        LaneTimeline timeline = LaneTimeline.fromEvents(recorder.events());
        if (c.json) {
            ObjectNode root = new ObjectMapper().createObjectNode();
            root.put("model", "simulated");
            root.put("stages", c.stages);
            ArrayNode reqs = root.putArray("requests");
            for (SimPipeline.Result r : results) {
                ObjectNode o = reqs.addObject();
                ArrayNode p = o.putArray("prompt_ids");
                for (int id : r.prompt()) {
                    p.add(id);
                }
                ArrayNode g = o.putArray("generated_ids");
                r.tokens().forEach(g::add);
                o.put("text", "");
            }
            root.put("tokens_per_s", generated / wall);
            root.put("wall_s", wall);
            c.out().println(root);
        } else {
            c.out().println(c.deviceWeights.isSet()
                    ? "graphlane: simulated backend: " + LAYERS_PER_STAGE + " layers of 64 MiB per stage, 0.5 ms of compute each, copies at"
                            + " 25 GB/s; no model is computed and tokens are placeholders."
                    : "graphlane: simulated backend: each stage step lasts 2 ms + 50 µs per position; no model is computed and tokens are placeholders.");
            for (int i = 0; i < results.size(); i++) {
                c.out().println("[" + i + "] " + results.get(i).tokens().size() + " placeholder tokens " + results.get(i).tokens());
            }
            c.out().printf(Locale.ROOT, "%d tokens in %.2f s: %.1f tokens/s over %d stage(s)%n", generated, wall, generated / wall, c.stages);
            for (LaneTimeline.LaneStats s : timeline.stats()) {
                c.out().printf(Locale.ROOT, "  %-10s busy %5.1f %%   bubble %5.1f %%%n", s.lane(), 100 * s.busyFraction(), 100 * (1 - s.busyFraction()));
            }
        }
        c.out().flush();
        c.writeTraces(recorder, timeline);
        return 0;
    }

    private static int[] bytes(String text) {
        byte[] b = text.getBytes(StandardCharsets.UTF_8);
        int[] ids = new int[b.length];
        for (int i = 0; i < b.length; i++) {
            ids[i] = b[i] & 0xff;
        }
        return ids;
    }
}
