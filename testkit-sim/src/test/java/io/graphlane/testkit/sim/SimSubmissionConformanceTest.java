package io.graphlane.testkit.sim;

import io.graphlane.core.backend.SubmissionBackend;
import io.graphlane.testkit.conformance.ConformanceWork;
import io.graphlane.testkit.conformance.SubmissionConformanceSuite;

/** The submission laws on the simulated device with wall-clock time and no reordering. */
class SimSubmissionConformanceTest extends SubmissionConformanceSuite<SimExecutor, SimCompletion, SimWork> {

    @Override
    protected SubmissionBackend<SimExecutor, SimCompletion, SimWork> createBackend() {
        return SimBackend.create();
    }

    @Override
    protected ConformanceWork<SimWork> workFor(SubmissionBackend<SimExecutor, SimCompletion, SimWork> backend) {
        return SimConformanceWork.of((SimBackend) backend);
    }
}
