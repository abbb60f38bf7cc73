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
import java.time.Duration;
import java.util.List;
import java.util.Optional;

/**
 * The collective laws on CPU lanes in one JVM, over the default in-process transport: segments are
 * lent by reference and read straight from the sender's storage. The chunk size (7 floats) only
 * matters to {@link CpuCollectiveCopyingConformanceTest}, which streams through a copying transport.
 */
class CpuCollectiveConformanceTest extends CollectiveConformanceSuite<CpuExecutor, CpuCompletion, CpuWork, CpuTensor, CpuCollectiveGroup> {
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
    protected CpuCollectiveGroup group(SubmissionBackend<CpuExecutor, CpuCompletion, CpuWork> backend, List<CpuExecutor> members,
                                       Duration memberTimeout) {
        return CpuCollectiveGroup.inProcess("conformance", members, new CollectiveSettings(memberTimeout, 7));
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
