package io.graphlane.backend.gpu;

import io.graphlane.core.backend.SubmissionBackend;
import io.graphlane.testkit.conformance.ConformanceWork;
import io.graphlane.testkit.conformance.SubmissionConformanceSuite;

/**
 * The submission laws on a real CUDA device: a marker is a host function launched on the stream,
 * a gate is a stream wait on a flag in mapped pinned memory that the test writes (blocking no
 * other stream); see {@link GpuConformanceWork}. Skipped, with the reason, where no CUDA driver or
 * device is present.
 */
class GpuSubmissionConformanceTest extends SubmissionConformanceSuite<GpuStream, GpuCompletion, GpuWork> {

    @Override
    protected SubmissionBackend<GpuStream, GpuCompletion, GpuWork> createBackend() {
        return GpuConformanceWork.openTestDevice("the GPU conformance suite");
    }

    @Override
    protected ConformanceWork<GpuWork> workFor(SubmissionBackend<GpuStream, GpuCompletion, GpuWork> backend) {
        return GpuConformanceWork.of((GpuBackend) backend);
    }
}
