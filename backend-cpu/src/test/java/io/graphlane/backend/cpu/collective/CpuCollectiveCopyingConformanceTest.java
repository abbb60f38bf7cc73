package io.graphlane.backend.cpu.collective;

import io.graphlane.backend.cpu.CpuCompletion;
import io.graphlane.backend.cpu.CpuExecutor;
import io.graphlane.backend.cpu.CpuWork;
import io.graphlane.core.backend.SubmissionBackend;
import java.time.Duration;
import java.util.List;

/**
 * The same collective laws over a transport that copies every chunk on send, as one across nodes
 * must: chunks are kept small (7 floats) so that the larger shapes of the suite stream as many uneven
 * chunks through the ring, and no chunk is lent.
 */
class CpuCollectiveCopyingConformanceTest extends CpuCollectiveConformanceTest {

    @Override
    protected CpuCollectiveGroup group(SubmissionBackend<CpuExecutor, CpuCompletion, CpuWork> backend, List<CpuExecutor> members,
                                       Duration memberTimeout) {
        return CpuCollectiveGroup.over("conformance-copying", members, new CollectiveSettings(memberTimeout, 7),
                InProcessTransport.copying(members.size()));
    }
}
