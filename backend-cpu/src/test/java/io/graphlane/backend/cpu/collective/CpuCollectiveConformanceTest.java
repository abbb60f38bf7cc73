package io.graphlane.backend.cpu.collective;

import io.graphlane.backend.cpu.CpuCompletion;
import io.graphlane.backend.cpu.CpuExecutor;
import io.graphlane.backend.cpu.CpuWork;
import io.graphlane.core.backend.SubmissionBackend;
import java.time.Duration;
import java.util.List;

/**
 * The collective laws on CPU lanes in one JVM, over the default in-process transport: segments are
 * lent by reference and read straight from the sender's storage. The chunk size (7 floats) only
 * matters to {@link CpuCollectiveCopyingConformanceTest}, which streams through a copying transport.
 */
class CpuCollectiveConformanceTest extends CpuCollectiveLaws {

    @Override
    protected CpuCollectiveGroup group(SubmissionBackend<CpuExecutor, CpuCompletion, CpuWork> backend, List<CpuExecutor> members,
                                       Duration memberTimeout) {
        return CpuCollectiveGroup.inProcess("conformance", members, new CollectiveSettings(memberTimeout, 7));
    }
}
