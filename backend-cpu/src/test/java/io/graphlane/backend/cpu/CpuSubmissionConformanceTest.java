package io.graphlane.backend.cpu;

import io.graphlane.core.backend.SubmissionBackend;
import io.graphlane.testkit.conformance.ConformanceWork;
import io.graphlane.testkit.conformance.SubmissionConformanceSuite;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

/** The submission laws on the CPU backend: a gate is a latch the lane's worker thread waits on. */
class CpuSubmissionConformanceTest extends SubmissionConformanceSuite<CpuExecutor, CpuCompletion, CpuWork> {

    @Override
    protected SubmissionBackend<CpuExecutor, CpuCompletion, CpuWork> createBackend() {
        return new CpuBackend();
    }

    @Override
    protected ConformanceWork<CpuWork> workFor(SubmissionBackend<CpuExecutor, CpuCompletion, CpuWork> backend) {
        return new ConformanceWork<>() {
            @Override
            public CpuWork noop() {
                return CpuWork.NOOP;
            }

            @Override
            public CpuWork failing(RuntimeException cause) {
                return () -> {
                    throw cause;
                };
            }

            @Override
            public CpuWork marker(Runnable onReached) {
                return onReached::run;
            }

            @Override
            public Gate<CpuWork> gate(String name) {
                CountDownLatch open = new CountDownLatch(1);
                CpuWork wait = () -> {
                    if (!open.await(2, TimeUnit.MINUTES)) {
                        throw new IllegalStateException("gate '" + name + "' was never opened");
                    }
                };
                return Gate.of(wait, open::countDown);
            }
        };
    }
}
