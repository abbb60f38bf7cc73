package io.graphlane.testkit.sim;

import io.graphlane.core.backend.SubmissionBackend;
import io.graphlane.testkit.conformance.ConformanceWork;
import io.graphlane.testkit.conformance.SubmissionConformanceSuite;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The submission laws on the simulated device while it reorders independent completions: a
 * different seed for every backend and up to 200 µs of random extra duration per item.
 */
class SeededSimSubmissionConformanceTest extends SubmissionConformanceSuite<SimExecutor, SimCompletion, SimWork> {
    private static final AtomicLong SEEDS = new AtomicLong(20_260_101L);

    @Override
    protected SubmissionBackend<SimExecutor, SimCompletion, SimWork> createBackend() {
        return SimBackend.builder().seed(SEEDS.incrementAndGet()).jitter(Duration.ofNanos(200_000)).build();
    }

    @Override
    protected ConformanceWork<SimWork> workFor(SubmissionBackend<SimExecutor, SimCompletion, SimWork> backend) {
        return SimConformanceWork.of((SimBackend) backend);
    }
}
