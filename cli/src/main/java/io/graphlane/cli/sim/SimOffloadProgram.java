package io.graphlane.cli.sim;

import io.graphlane.core.backend.TransferBackend;
import io.graphlane.inference.offload.LayerStreaming;
import io.graphlane.inference.offload.OffloadPlan;
import io.graphlane.inference.offload.PromotedLayer;
import io.graphlane.inference.offload.TransferSubmissions;
import io.graphlane.scheduler.pipeline.MicroBatch;
import io.graphlane.scheduler.pipeline.SampledToken;
import io.graphlane.scheduler.pipeline.StageProgram;
import io.graphlane.scheduler.pipeline.StageStep;
import io.graphlane.testkit.sim.SimBackend;
import io.graphlane.testkit.sim.SimCompletion;
import io.graphlane.testkit.sim.SimExecutor;
import io.graphlane.testkit.sim.SimHostBuffer;
import io.graphlane.testkit.sim.SimTransferBackend;
import io.graphlane.testkit.sim.SimWeight;
import io.graphlane.testkit.sim.SimWork;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A model of layers on the simulated device, with an {@link OffloadPlan}: resident layers are read in place, streamed
 * ones are promoted from host buffers through a {@link SimTransferBackend} on each stage's transfer lane and read by
 * the compute lane after the promotion's completion ({@link LayerStreaming}). Each layer has contents (a number) that
 * a compute work mixes into every request's running value; the last stage's value is the token. A promoted layer read
 * before its copy completed, or after its bytes were freed, fails the step, so equal tokens with and without a budget
 * show that every read was ordered after its promotion. Every layer's compute lasts {@code computePerLayer}; a copy
 * lasts what the transfer backend says.
 */
public final class SimOffloadProgram implements StageProgram<SimWork, Object> {
    private final OffloadPlan plan;
    private final Duration computePerLayer;
    private final SimTransferBackend transfer;
    private final TransferSubmissions<SimExecutor, SimCompletion, SimWork> submissions;
    private final List<SimHostBuffer> hosts = new ArrayList<>();
    private final int vocab;
    private final AtomicLong promotedFreed = new AtomicLong();
    private final AtomicLong promotedMade = new AtomicLong();

    /** Running values of a step's requests, in entry order. */
    static final class Values {
        final long[] values;

        Values(int n) {
            values = new long[n];
        }
    }

    /**
     * The program over {@code plan}'s stages and layers (each of {@code plan}'s layer sizes), whose streamed layers are
     * promoted by {@code transfer} through {@code submissions} (the lane group's backend).
     */
    public SimOffloadProgram(OffloadPlan plan, Duration computePerLayer, SimTransferBackend transfer,
                             TransferSubmissions<SimExecutor, SimCompletion, SimWork> submissions, int vocab) {
        this.plan = Objects.requireNonNull(plan, "plan");
        this.computePerLayer = Objects.requireNonNull(computePerLayer, "computePerLayer");
        this.transfer = Objects.requireNonNull(transfer, "transfer");
        this.submissions = Objects.requireNonNull(submissions, "submissions");
        this.vocab = vocab;
        for (OffloadPlan.Stage s : plan.stages()) {
            for (int l = 0; l < s.layerBytes().length; l++) {
                int layer = s.firstLayer() + l;
                hosts.add(new SimHostBuffer("layer-" + layer, s.layerBytes()[l], contents(layer)));
            }
        }
    }

    /** The contents of model layer {@code layer}. */
    static long contents(int layer) {
        return 0x9E3779B97F4A7C15L * (layer + 1) ^ 0x5DEECE66DL;
    }

    /** The submissions adapter a pipeline over this program's lanes must submit through. */
    public static TransferSubmissions<SimExecutor, SimCompletion, SimWork> submissions(SimBackend backend) {
        return new TransferSubmissions<>(backend);
    }

    @Override
    public int stageCount() {
        return plan.stages().size();
    }

    /** A stage that streams runs on a compute lane and a transfer lane. */
    @Override
    public int laneCount(int stage) {
        return plan.stages().get(stage).streams() ? 2 : 1;
    }

    @Override
    public StageStep<SimWork, Object> plan(int stage, MicroBatch batch, Object input) {
        OffloadPlan.Stage s = plan.stages().get(stage);
        Values out = new Values(batch.entries().size());
        Values in = stage == 0 ? fromTokens(batch) : (Values) input;
        int layers = s.layerBytes().length;
        if (!s.streams()) {
            return new StageStep<>(SimWork.callingFor(() -> compute(s, in, out, true, 0, layers, null), computePerLayer.multipliedBy(layers)), out);
        }
        List<PromotedLayer<SimWeight>> promoted = new ArrayList<>();
        for (int l = 0; l < layers; l++) {
            promoted.add(s.isResident(l) ? null : new PromotedLayer<>("layer-" + (s.firstLayer() + l), w -> {
                w.close();
                promotedFreed.incrementAndGet();
            }));
        }
        List<StageStep.Submission<SimWork>> subs = LayerStreaming.plan(s, new LayerStreaming.Parts<>() {
            private final List<AutoCloseable> registrations = new ArrayList<>(java.util.Collections.nCopies(layers, null));

            @Override
            public SimWork handOff() {
                return SimWork.instant();
            }

            @Override
            public SimWork compute(int group, int from, int to) {
                return SimWork.callingFor(() -> SimOffloadProgram.this.compute(s, in, out, group == 0, from, to, promoted),
                        computePerLayer.multipliedBy(to - from));
            }

            @Override
            public SimWork promote(int layer) {
                SimWork marker = SimWork.calling(() -> {
                    throw new IllegalStateException("a promotion ran as plain work: its lane does not submit through TransferSubmissions");
                });
                SimHostBuffer host = hosts.get(s.firstLayer() + layer);
                registrations.set(layer, submissions.register(marker, lane -> {
                    TransferBackend.Transfer<SimWeight> t = transfer.promote(lane, host);
                    promoted.get(layer).set(t.destination());
                    promotedMade.incrementAndGet();
                    return (SimCompletion) t.completion();
                }));
                return marker;
            }

            @Override
            public List<Object> promotionRetains(int layer) {
                return List.of(promoted.get(layer).holds().get(0), registrations.get(layer));
            }

            @Override
            public List<Object> computeRetains(int group, int from, int to) {
                return group == 0 ? List.of() : List.of(promoted.get(from).holds().get(1));
            }
        });
        return new StageStep<>(subs, out);
    }

    /** Layers {@code [from, to)} of stage {@code s}; the first group starts from the input. */
    private void compute(OffloadPlan.Stage s, Values in, Values out, boolean first, int from, int to, List<PromotedLayer<SimWeight>> promoted) {
        if (first) {
            System.arraycopy(in.values, 0, out.values, 0, out.values.length);
        }
        for (int l = from; l < to; l++) {
            long w = s.isResident(l) ? contents(s.firstLayer() + l) : promoted.get(l).get().read();
            for (int i = 0; i < out.values.length; i++) {
                out.values[i] = mix(out.values[i], w);
            }
        }
    }

    private static long mix(long value, long weight) {
        long h = (value ^ weight) * 0xBF58476D1CE4E5B9L;
        return h ^ (h >>> 31);
    }

    private static Values fromTokens(MicroBatch batch) {
        Values v = new Values(batch.entries().size());
        for (int i = 0; i < v.values.length; i++) {
            MicroBatch.Entry e = batch.entries().get(i);
            v.values[i] = mix(e.tokens()[e.tokens().length - 1], e.startPosition() + e.tokens().length);
        }
        return v;
    }

    @Override
    public SampledToken[] sampledTokens(MicroBatch batch, Object lastOutput) {
        long[] values = ((Values) lastOutput).values;
        SampledToken[] tokens = new SampledToken[values.length];
        for (int i = 0; i < tokens.length; i++) {
            tokens[i] = SampledToken.of((int) Math.floorMod(values[i], (long) vocab));
        }
        return tokens;
    }

    @Override
    public void release(Object output) {
        // Simulated values hold no storage.
    }

    @Override
    public void forget(long requestId) {
        // No per-request state.
    }

    @Override
    public void rewind(long requestId, int position) {
        // No per-request state.
    }

    /** Promoted copies made so far. */
    public long promotedCopies() {
        return promotedMade.get();
    }

    /** Promoted copies freed so far. */
    public long promotedCopiesFreed() {
        return promotedFreed.get();
    }

    /** The plan this program runs. */
    public OffloadPlan offloadPlan() {
        return plan;
    }
}
