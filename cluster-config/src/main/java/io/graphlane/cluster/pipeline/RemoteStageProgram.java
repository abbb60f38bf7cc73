package io.graphlane.cluster.pipeline;

import io.graphlane.actors.wire.WireTensor;
import io.graphlane.inference.pipeline.LlamaStageProgram;
import io.graphlane.scheduler.pipeline.MicroBatch;
import io.graphlane.scheduler.pipeline.SampledToken;
import io.graphlane.scheduler.pipeline.StageProgram;
import io.graphlane.scheduler.pipeline.StageStep;
import java.util.ArrayList;
import java.util.List;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;

/**
 * The pipeline engine's {@link StageProgram} for stages hosted on other nodes: stage k's work is a {@link Work} record
 * (the micro-batch, the slot stage k−1 fills, the slot it fills) that the proxy lane of stage k sends to the stage's
 * host as one batched {@link StageHost.Step} ({@link StageLinks}); the host's answer fills the output slot before the
 * work's completion completes, so a reader ordered after that completion finds it filled. The last stage's slot holds
 * the logits at each request's last position, sampled here with each request's sampling state
 * ({@link LlamaStageProgram#sampleRows}, the one sampling loop). The KV-cache changes the engine asks for (a request
 * forgotten, a failed step rewound) wait per stage and travel with the next work sent to that stage's host, which
 * applies them before that work: a step, or the change work the engine sends at once after requests ended
 * ({@link #planChanges}), which the host answers once it has applied them on the stage's lane. One position of one
 * request takes {@link #kvBytesPerPosition()} on the node that holds the most of it, which is what admission reserves
 * per position against each node's budget.
 */
final class RemoteStageProgram implements StageProgram<RemoteStageProgram.Work, RemoteStageProgram.Slot> {

    /**
     * Stage {@code stage}'s part of one micro-batch step: read {@code input} (null on stage 0), fill {@code output}; or,
     * without a batch, the stage's waiting cache changes alone ({@link #changes}).
     */
    record Work(int stage, MicroBatch batch, Slot input, Slot output) {
        /** The work that carries stage {@code stage}'s waiting changes to its host and nothing else. */
        static Work changes(int stage) {
            return new Work(stage, null, null, null);
        }

        /** Whether this work carries only cache changes. */
        boolean changesOnly() {
            return batch == null;
        }
    }

    /** One stage's output of one step, as it came back from the stage's host. */
    static final class Slot {
        private volatile WireTensor values;

        void fill(WireTensor produced) {
            this.values = produced;
        }

        WireTensor values() {
            WireTensor v = values;
            if (v == null) {
                throw new IllegalStateException("stage output read before the step that fills it completed");
            }
            return v;
        }

        void clear() {
            values = null;
        }
    }

    /** A change to one request's KV caches: forgotten ({@code position} &lt; 0) or rewound to {@code position}. */
    record Change(long requestId, int position) {
        boolean forget() {
            return position < 0;
        }
    }

    private final int stages;
    private final long kvBytesPerPosition;
    private final List<Queue<Change>> pending = new ArrayList<>();

    /** A program of {@code stages} remote stages; one position of one request takes {@code kvBytesPerPosition} on the node holding the most of it. */
    RemoteStageProgram(int stages, long kvBytesPerPosition) {
        if (stages < 1) {
            throw new IllegalArgumentException("a pipeline needs at least one stage, got " + stages);
        }
        this.stages = stages;
        this.kvBytesPerPosition = kvBytesPerPosition;
        for (int i = 0; i < stages; i++) {
            pending.add(new ConcurrentLinkedQueue<>());
        }
    }

    @Override
    public int stageCount() {
        return stages;
    }

    @Override
    public StageStep<Work, Slot> plan(int stage, MicroBatch batch, Slot input) {
        Slot out = new Slot();
        return new StageStep<>(new Work(stage, batch, input, out), out);
    }

    @Override
    public SampledToken[] sampledTokens(MicroBatch batch, Slot lastOutput) {
        WireTensor logits = lastOutput.values();
        long[] dims = logits.shape().dims();
        return LlamaStageProgram.sampleRows(logits.toFloats(), (int) dims[0], (int) dims[1], batch);
    }

    @Override
    public void release(Slot output) {
        output.clear();
    }

    @Override
    public void forget(long requestId) {
        pending.forEach(q -> q.add(new Change(requestId, -1)));
    }

    @Override
    public void rewind(long requestId, int position) {
        pending.forEach(q -> q.add(new Change(requestId, position)));
    }

    /** One work to stage {@code stage}'s host that carries its waiting changes; the host answers once it applied them. */
    @Override
    public List<StageStep.Submission<Work>> planChanges(int stage) {
        return List.of(new StageStep.Submission<>(0, Work.changes(stage), List.of()));
    }

    @Override
    public long kvBytesPerPosition() {
        return kvBytesPerPosition;
    }

    /** Takes the changes stage {@code stage} has waiting, in the order they were asked for: the next step to it carries them. */
    List<Change> takeChanges(int stage) {
        Queue<Change> q = pending.get(stage);
        List<Change> taken = new ArrayList<>();
        for (Change c = q.poll(); c != null; c = q.poll()) {
            taken.add(c);
        }
        return taken;
    }
}
