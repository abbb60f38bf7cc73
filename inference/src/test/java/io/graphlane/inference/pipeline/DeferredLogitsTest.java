package io.graphlane.inference.pipeline;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.graphlane.backend.cpu.CpuWork;
import io.graphlane.backend.cpu.nn.CpuNeuralOps;
import io.graphlane.backend.cpu.nn.CpuTensor;
import io.graphlane.checkpoint.CheckpointSource;
import io.graphlane.core.nn.HostCopy;
import io.graphlane.core.nn.NeuralOps;
import io.graphlane.inference.llama.LlamaStage;
import io.graphlane.inference.model.CpuModels;
import io.graphlane.inference.model.Fixture;
import io.graphlane.inference.model.ModelDirectory;
import io.graphlane.inference.sampling.Sampler;
import io.graphlane.inference.sampling.SamplingParams;
import io.graphlane.inference.stage.StagePlan;
import io.graphlane.inference.stage.StageSpec;
import io.graphlane.inference.weights.StageWeightsAssembly;
import io.graphlane.inference.weights.StageWeightsLoader;
import io.graphlane.scheduler.pipeline.MicroBatch;
import io.graphlane.scheduler.pipeline.SampledToken;
import io.graphlane.scheduler.pipeline.StageStep;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.Test;

/**
 * The last stage on a backend whose logits reach the host only after the step completed (a GPU's
 * asynchronous copy), simulated on the CPU: the stage's work leaves the copy unread, the program
 * samples from it once the step is done, and releasing the slot frees it.
 */
class DeferredLogitsTest {

    /** A copy whose values may be read only once {@code completed} is set, as a device copy after its step. */
    private static final class DeviceLikeCopy implements HostCopy {
        final HostCopy values;
        final AtomicBoolean completed;
        final AtomicBoolean closed = new AtomicBoolean();

        DeviceLikeCopy(HostCopy values, AtomicBoolean completed) {
            this.values = values;
            this.completed = completed;
        }

        @Override
        public boolean readableNow() {
            return false;
        }

        @Override
        public int rows() {
            return values.rows();
        }

        @Override
        public int cols() {
            return values.cols();
        }

        @Override
        public float[] values() {
            if (!completed.get()) {
                throw new IllegalStateException("logits read before the step completed");
            }
            return values.values();
        }

        @Override
        public void close() {
            closed.set(true);
        }
    }

    @SuppressWarnings("unchecked")
    private static NeuralOps<CpuTensor> deferringCopies(CpuNeuralOps cpu, List<DeviceLikeCopy> copies, AtomicBoolean completed) {
        return (NeuralOps<CpuTensor>) Proxy.newProxyInstance(NeuralOps.class.getClassLoader(), new Class<?>[] {NeuralOps.class},
                (proxy, method, args) -> {
                    try {
                        Object result = method.invoke(cpu, args);
                        if (method.getName().equals("copyToHost")) {
                            DeviceLikeCopy copy = new DeviceLikeCopy((HostCopy) result, completed);
                            copies.add(copy);
                            return copy;
                        }
                        return result;
                    } catch (InvocationTargetException e) {
                        throw e.getCause();
                    }
                });
    }

    @Test
    void logitsNotReadableAtOnceAreSampledAfterTheStepAndFreedWithTheSlot() throws Exception {
        ModelDirectory model = ModelDirectory.open(Fixture.dir(""));
        CpuNeuralOps cpu = new CpuNeuralOps();
        List<DeviceLikeCopy> copies = new ArrayList<>();
        AtomicBoolean completed = new AtomicBoolean();
        NeuralOps<CpuTensor> ops = deferringCopies(cpu, copies, completed);
        List<LlamaStage<CpuTensor>> stages = new ArrayList<>();
        try (CheckpointSource source = model.openSource(CheckpointSource.DEFAULT_MAX_OPEN_SHARDS)) {
            StageWeightsLoader<CpuTensor> loader = CpuModels.loader(model, source, cpu);
            for (StageSpec spec : StagePlan.balanced(model.config().layerCount(), 2).stages()) {
                stages.add(new LlamaStage<>(model.config(), loader.load(spec), ops));
            }
        }
        Fixture.Prompt prompt = Fixture.prompts().get(0);
        try (LlamaStageProgram<CpuTensor, CpuWork> program = new LlamaStageProgram<>(stages, body -> body::run)) {
            MicroBatch batch = new MicroBatch(1, List.of(new MicroBatch.Entry(7, prompt.ids(), 0, new Sampler(SamplingParams.GREEDY))));
            StageStep<CpuWork, StageSlot<CpuTensor>> first = program.plan(0, batch, null);
            first.work().run();
            StageStep<CpuWork, StageSlot<CpuTensor>> last = program.plan(1, batch, first.output());
            last.work().run(); // reads nothing back: it would throw, the step has not completed
            assertEquals(1, copies.size(), "the last stage started one copy of its logits");
            assertEquals(null, last.output().sampledOrNull(), "nothing sampled inside the work");
            completed.set(true);
            SampledToken[] tokens = program.sampledTokens(batch, last.output());
            assertEquals(prompt.greedy16()[0], tokens[0].id(), "the reference's first greedy token");
            assertFalse(copies.get(0).closed.get(), "the copy lives until its slot is released");
            program.release(first.output());
            program.release(last.output());
            assertTrue(copies.get(0).closed.get(), "releasing the slot frees the copy");
        } finally {
            for (LlamaStage<CpuTensor> stage : stages) {
                StageWeightsAssembly.release(stage.weights(), cpu);
            }
        }
    }
}
