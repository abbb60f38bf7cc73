package io.graphlane.backend.cpu;

import io.graphlane.core.backend.SubmissionBackend;
import io.graphlane.testkit.conformance.ConformanceWork;
import io.graphlane.testkit.conformance.SubmissionConformanceSuite;

/** The submission laws on the CPU backend: a gate is a latch the lane's worker thread waits on. */
class CpuSubmissionConformanceTest extends SubmissionConformanceSuite<CpuExecutor, CpuCompletion, CpuWork> {

    @Override
    protected SubmissionBackend<CpuExecutor, CpuCompletion, CpuWork> createBackend() {
        return new CpuBackend();
    }

    @Override
    protected ConformanceWork<CpuWork> workFor(SubmissionBackend<CpuExecutor, CpuCompletion, CpuWork> backend) {
        return ConformanceWork.onHostThread(CpuWork.NOOP, action -> action::run);
    }
}
