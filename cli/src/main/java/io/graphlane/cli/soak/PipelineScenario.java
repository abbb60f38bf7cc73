package io.graphlane.cli.soak;

import io.graphlane.actors.lane.LaneSettings;
import io.graphlane.scheduler.pipeline.EngineFinishReason;
import io.graphlane.scheduler.pipeline.EngineListener;
import io.graphlane.scheduler.pipeline.MicroBatch;
import io.graphlane.scheduler.pipeline.Pipeline;
import io.graphlane.scheduler.pipeline.PipelineOverloadedException;
import io.graphlane.scheduler.pipeline.PipelineRequest;
import io.graphlane.scheduler.pipeline.PipelineSettings;
import io.graphlane.scheduler.pipeline.SampledToken;
import io.graphlane.scheduler.pipeline.StageProgram;
import io.graphlane.scheduler.pipeline.StageStep;
import io.graphlane.testkit.ledger.RetentionLedger;
import io.graphlane.testkit.sim.SimWork;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.SplittableRandom;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.pekko.actor.typed.ActorSystem;

/**
 * Pipeline-engine workloads: a few requests through 1–3 stage lanes on the simulated device, with
 * a stage program whose steps last, fail or are held, and cancels at every state, deadlines,
 * device loss and lane stop. Every admitted request must end exactly once, with no token after its
 * end; every stage output is freed exactly once and never while the work that writes or reads it runs.
 */
final class PipelineScenario {
    private static final AtomicInteger NAMES = new AtomicInteger();
    private static final int VOCAB = 16;

    private final ScenarioRun run;
    private final ActorSystem<?> system;
    private final LaneSettings laneDefaults;
    private final List<CompletableFuture<Void>> ends = new ArrayList<>();
    private ScenarioLanes lanes;

    PipelineScenario(ScenarioRun run, ActorSystem<?> system, LaneSettings laneDefaults) {
        this.run = run;
        this.system = system;
        this.laneDefaults = laneDefaults;
    }

    void play(FaultInjector injector) {
        SplittableRandom rnd = run.random();
        int stages = 1 + rnd.nextInt(3);
        lanes = new ScenarioLanes(run, system, "s", stages, laneDefaults.withLimits(1 + rnd.nextInt(3), 8));
        PipelineSettings settings = new PipelineSettings(1 + rnd.nextInt(4), 1 + rnd.nextInt(4), 1 + rnd.nextInt(3), 1 + rnd.nextInt(3));
        SoakProgram program = new SoakProgram(stages, rnd.nextLong());
        Pipeline<SimWork, Output> pipeline = Pipeline.start(system, lanes.group().registry(), lanes.group().laneIds(), program, settings,
                "soak-pipeline-" + NAMES.incrementAndGet());

        int requests = 1 + rnd.nextInt(6);
        for (int q = 0; q < requests; q++) {
            planRequest(q, pipeline, rnd);
        }
        lanes.scheduleDeviceAndLaneFaults(rnd);
        injector.inject(run);

        run.driveUntil(() -> allEnded() && run.extraEnded(), "pipeline requests");
        CompletableFuture<?> engineStopped = pipeline.stop(new IllegalStateException("soak scenario over")).toCompletableFuture();
        engineStopped.whenComplete((v, e) -> run.wake());
        run.driveUntil(engineStopped::isDone, "pipeline stop");
        lanes.stopAndCheck();
    }

    private boolean allEnded() {
        for (CompletableFuture<Void> e : ends) {
            if (!e.isDone()) {
                return false;
            }
        }
        return true;
    }

    private void planRequest(int q, Pipeline<SimWork, Output> pipeline, SplittableRandom rnd) {
        int[] prompt = new int[1 + rnd.nextInt(3)];
        for (int i = 0; i < prompt.length; i++) {
            prompt[i] = rnd.nextInt(VOCAB);
        }
        int maxNew = 1 + rnd.nextInt(4);
        int eos = rnd.nextInt(100) < 30 ? rnd.nextInt(VOCAB) : -1;
        long deadlineAfter = rnd.nextInt(100) < 12 ? rnd.nextInt(500_000) : -1;
        int startRound = rnd.nextInt(100) < 70 ? 0 : rnd.nextInt(5);
        int cancel = rnd.nextInt(100);
        int cancelRound = 1 + rnd.nextInt(5);
        CompletableFuture<Void> ended = new CompletableFuture<>();
        ends.add(ended);
        run.atRound(startRound, () -> {
            long deadline = deadlineAfter < 0 ? Long.MAX_VALUE : System.nanoTime() + deadlineAfter;
            Listener listener = new Listener(q, maxNew, ended);
            long id;
            try {
                id = pipeline.submit(new PipelineRequest(prompt, maxNew, eos, deadline, null), listener);
            } catch (PipelineOverloadedException refused) {
                ended.complete(null);
                return;
            }
            if (cancel < 10) {
                run.note("request " + q + " cancelled at once");
                pipeline.cancel(id); // queued: before any step of it
            } else if (cancel < 22) {
                run.atRound(run.round() + cancelRound, () -> {
                    run.note("request " + q + " cancelled at round " + run.round());
                    pipeline.cancel(id);
                }); // wherever it is by then
            } else if (cancel < 28) {
                ended.whenComplete((v, e) -> pipeline.cancel(id)); // after its end: must change nothing
            }
        });
    }

    /** Counts a request's ends and tokens: exactly one end, no token after it, at most max-new tokens. */
    private final class Listener implements EngineListener {
        private final int request;
        private final int maxNew;
        private final CompletableFuture<Void> ended;
        private final AtomicInteger endCount = new AtomicInteger();
        private final AtomicInteger tokens = new AtomicInteger();

        Listener(int request, int maxNew, CompletableFuture<Void> ended) {
            this.request = request;
            this.maxNew = maxNew;
            this.ended = ended;
        }

        @Override
        public void onToken(int tokenId) {
            if (endCount.get() > 0) {
                run.problem("request " + request + " got token " + tokenId + " after its end");
            }
            if (tokens.incrementAndGet() > maxNew) {
                run.problem("request " + request + " got more than its " + maxNew + " tokens");
            }
        }

        @Override
        public void onFinished(EngineFinishReason reason) {
            end("finished " + reason);
        }

        @Override
        public void onFailed(Throwable cause) {
            end("failed " + cause);
        }

        private void end(String how) {
            run.note("request " + request + " " + how);
            if (endCount.incrementAndGet() > 1) {
                run.problem("request " + request + " ended twice (again: " + how + ")");
            }
            ended.complete(null);
            run.wake();
        }
    }

    /** A stage output: a ledger entry, and the holds of the work that writes it and the work that reads it. */
    static final class Output {
        final RetentionLedger.Entry entry;
        final String writer;
        volatile String reader;

        Output(RetentionLedger.Entry entry, String writer) {
            this.entry = entry;
            this.writer = writer;
        }
    }

    /** Steps that last, fail or are held; the last stage samples a token from the request's last one. */
    private final class SoakProgram implements StageProgram<SimWork, Output> {
        private final int stages;
        /** Planning runs on the engine's thread only, in the engine's order. */
        private final Random random;
        private int outputs;

        SoakProgram(int stages, long seed) {
            this.stages = stages;
            this.random = new Random(seed);
        }

        @Override
        public int stageCount() {
            return stages;
        }

        @Override
        public StageStep<SimWork, Output> plan(int stage, MicroBatch batch, Output input) {
            String id = "s" + stage + "b" + batch.id() + "o" + (outputs++);
            int kind = random.nextInt(100);
            String hold = null;
            SimWork work;
            if (kind < 40) {
                work = SimWork.lasting(Duration.ofNanos(random.nextInt(40_000)));
            } else if (kind < 44) {
                work = SimWork.failing(new IllegalStateException(id + " fails (soak fault)"));
            } else {
                hold = run.holdOf(id, random.nextInt(100) < 4 ? new IllegalStateException(id + " fails (soak fault)") : null);
                work = SimWork.held(hold);
            }
            if (input != null) {
                input.reader = hold;
            }
            run.note("plan " + id + " for " + batch.entries().stream().map(MicroBatch.Entry::requestId).toList() + ": " + work);
            RetentionLedger.Entry entry = run.ledger().acquire(id);
            run.sharedOutput(entry);
            return new StageStep<>(work, new Output(entry, hold));
        }

        @Override
        public SampledToken[] sampledTokens(MicroBatch batch, Output lastOutput) {
            SampledToken[] tokens = new SampledToken[batch.entries().size()];
            for (int i = 0; i < tokens.length; i++) {
                MicroBatch.Entry e = batch.entries().get(i);
                tokens[i] = SampledToken.of(Math.floorMod(e.tokens()[e.tokens().length - 1] * 7 + e.startPosition() + 3, VOCAB));
            }
            return tokens;
        }

        @Override
        public void release(Output output) {
            for (String h : new String[] {output.writer, output.reader}) {
                if (h != null && run.isRunning(h)) {
                    run.earlyRelease("stage output " + output.entry.name() + " freed while work " + h + " runs");
                }
            }
            run.note("release " + output.entry.name());
            output.entry.close();
        }

        @Override
        public void forget(long requestId) {
            // no per-request state
        }

        @Override
        public void rewind(long requestId, int position) {
            // no per-request state
        }
    }
}
