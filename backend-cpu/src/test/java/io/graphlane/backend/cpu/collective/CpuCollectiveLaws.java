package io.graphlane.backend.cpu.collective;

import io.graphlane.backend.cpu.CpuBackend;
import io.graphlane.backend.cpu.CpuCompletion;
import io.graphlane.backend.cpu.CpuExecutor;
import io.graphlane.backend.cpu.CpuWork;
import io.graphlane.backend.cpu.nn.CpuNeuralOps;
import io.graphlane.backend.cpu.nn.CpuTensor;
import io.graphlane.core.backend.CollectiveBackend;
import io.graphlane.core.backend.SubmissionBackend;
import io.graphlane.core.completion.Completion;
import io.graphlane.testkit.conformance.CollectiveConformanceSuite;
import io.graphlane.testkit.conformance.ConformanceWork;
import java.util.Optional;

/**
 * The collective laws on CPU lanes, whatever carries the members' messages: a subclass says how a group is
 * formed ({@link #group}): in one JVM by reference ({@link CpuCollectiveConformanceTest}), copying
 * ({@link CpuCollectiveCopyingConformanceTest}), or across nodes (cluster-config's conformance tests, through
 * this module's test jar).
 */
public abstract class CpuCollectiveLaws
        extends CollectiveConformanceSuite<CpuExecutor, CpuCompletion, CpuWork, CpuTensor, CpuCollectiveGroup> {
    private final CpuNeuralOps ops = new CpuNeuralOps();

    @Override
    protected SubmissionBackend<CpuExecutor, CpuCompletion, CpuWork> createBackend() {
        return new CpuBackend();
    }

    @Override
    protected CollectiveBackend<CpuExecutor, CpuTensor, CpuCollectiveGroup> collectivesFor(SubmissionBackend<CpuExecutor, CpuCompletion, CpuWork> backend) {
        return new CpuCollectives((CpuBackend) backend);
    }

    @Override
    protected ConformanceWork<CpuWork> workFor(SubmissionBackend<CpuExecutor, CpuCompletion, CpuWork> backend) {
        return ConformanceWork.onHostThread(CpuWork.NOOP, action -> action::run);
    }


    @Override
    protected CpuTensor tensor(CpuExecutor lane, float[] values, int rows, int cols) {
        return ops.fromHost(values, rows, cols);
    }

    @Override
    protected float[] read(CpuTensor tensor) {
        float[] out = new float[tensor.rows() * tensor.cols()];
        ops.toHost(tensor, out);
        return out;
    }

    @Override
    protected int rows(CpuTensor tensor) {
        return tensor.rows();
    }

    @Override
    protected void release(CpuTensor tensor) {
        ops.release(tensor);
    }

    @Override
    protected Completion leave(CpuCollectiveGroup group, CpuExecutor lane, RuntimeException cause) {
        return ((CpuCollectives) collectives()).leave(group, lane, cause);
    }

    @Override
    protected Optional<Runnable> unsupportedCollective(CpuCollectiveGroup group, CpuExecutor lane, CpuTensor value) {
        return Optional.of(() -> ((CpuCollectives) collectives()).allReduce(value, ReduceOp.AVERAGE, group, lane));
    }
}
