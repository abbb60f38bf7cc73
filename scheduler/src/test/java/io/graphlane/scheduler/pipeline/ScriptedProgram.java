package io.graphlane.scheduler.pipeline;

import io.graphlane.testkit.sim.SimWork;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BiFunction;

/**
 * A stage program on the simulated backend for engine tests. Each stage's work records that it
 * ran; the last stage "samples" {@link #next} of the request's last input token. A test can make
 * any stage's work of a chosen request hold (until released) or fail, by a hook.
 */
final class ScriptedProgram implements StageProgram<SimWork, ScriptedProgram.Slot> {

    /** A stage output: which step filled it, and (last stage) the tokens. */
    static final class Slot {
        final long batch;
        final int stage;
        final AtomicInteger releases = new AtomicInteger();

        Slot(long batch, int stage) {
            this.batch = batch;
            this.stage = stage;
        }
    }

    /** (stage, batch id) in the order the device ran them. */
    final ConcurrentLinkedQueue<String> ran = new ConcurrentLinkedQueue<>();
    final List<Slot> outputs = new java.util.concurrent.CopyOnWriteArrayList<>();
    final Set<Long> forgotten = ConcurrentHashMap.newKeySet();
    final List<String> rewound = new java.util.concurrent.CopyOnWriteArrayList<>();
    final Map<Long, List<Integer>> tokensByRequest = new ConcurrentHashMap<>();
    private final int stages;
    volatile BiFunction<Integer, MicroBatch, SimWork> override = (stage, batch) -> null;
    /** When set, {@link #forget} throws it: a fault of the program that reaches the engine. */
    volatile RuntimeException forgetFails;
    /** What {@link #kvBytesPerPosition()} reports. */
    volatile long bytesPerPosition;
    /**
     * When set, {@link #forget} only queues the request on every stage, and {@link #planChanges} plans one work per stage
     * that frees what is queued there, as a stage whose caches live on its lane does; this hook may replace that work
     * (null keeps it).
     */
    volatile boolean changesOnLanes;
    volatile java.util.function.IntFunction<SimWork> changeWork = stage -> null;
    /** Per stage, requests forgotten and not yet freed by a change work ({@link #changesOnLanes}). */
    final List<ConcurrentLinkedQueue<Long>> unfreed = new ArrayList<>();
    /** Change works planned, per stage. */
    final Map<Integer, AtomicInteger> changeWorks = new ConcurrentHashMap<>();

    ScriptedProgram(int stages) {
        this.stages = stages;
        for (int i = 0; i < stages; i++) {
            unfreed.add(new ConcurrentLinkedQueue<>());
        }
    }

    /** The scripted next token after {@code previous}. */
    static int next(int previous) {
        return (previous * 31 + 7) % 1000;
    }

    @Override
    public int stageCount() {
        return stages;
    }

    @Override
    public StageStep<SimWork, Slot> plan(int stage, MicroBatch batch, Slot input) {
        if (stage > 0 && (input == null || input.stage != stage - 1 || input.batch != batch.id())) {
            throw new AssertionError("stage " + stage + " of batch " + batch.id() + " got the wrong input");
        }
        Slot out = new Slot(batch.id(), stage);
        outputs.add(out);
        SimWork custom = override.apply(stage, batch);
        if (custom != null) {
            return new StageStep<>(custom, out);
        }
        return new StageStep<>(SimWork.calling(() -> ran.add(stage + "/" + batch.id())), out);
    }

    @Override
    public SampledToken[] sampledTokens(MicroBatch batch, Slot lastOutput) {
        SampledToken[] tokens = new SampledToken[batch.entries().size()];
        for (int i = 0; i < tokens.length; i++) {
            int[] in = batch.entries().get(i).tokens();
            tokens[i] = SampledToken.of(next(in[in.length - 1]));
        }
        return tokens;
    }

    @Override
    public void release(Slot output) {
        output.releases.incrementAndGet();
    }

    @Override
    public void forget(long requestId) {
        RuntimeException fault = forgetFails;
        if (fault != null) {
            throw fault;
        }
        if (changesOnLanes) {
            unfreed.forEach(q -> q.add(requestId));
        } else {
            forgotten.add(requestId);
        }
    }

    @Override
    public List<StageStep.Submission<SimWork>> planChanges(int stage) {
        if (!changesOnLanes) {
            return List.of();
        }
        changeWorks.computeIfAbsent(stage, k -> new AtomicInteger()).incrementAndGet();
        SimWork custom = changeWork.apply(stage);
        SimWork work = custom != null ? custom : SimWork.calling(() -> {
            ConcurrentLinkedQueue<Long> q = unfreed.get(stage);
            for (Long id = q.poll(); id != null; id = q.poll()) {
                if (stage == stages - 1) {
                    forgotten.add(id);
                }
            }
        });
        return List.of(new StageStep.Submission<>(0, work, List.of()));
    }

    @Override
    public long kvBytesPerPosition() {
        return bytesPerPosition;
    }

    @Override
    public void rewind(long requestId, int position) {
        rewound.add(requestId + "@" + position);
    }

    /** The tokens a request with this prompt gets. */
    static List<Integer> expected(int[] prompt, int count) {
        List<Integer> out = new ArrayList<>();
        int prev = prompt[prompt.length - 1];
        for (int i = 0; i < count; i++) {
            prev = next(prev);
            out.add(prev);
        }
        return out;
    }
}
