package io.graphlane.backend.gpu;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.Map;
import org.junit.jupiter.api.Test;

/** The per-class verdict of the GPU check: a class with passes and no failures passed, even when some of its tests skipped. */
class GpuCheckTest {
    @Test
    void aClassWithPassesAndSkipsButNoFailuresPassed() {
        assertEquals(GpuCheck.Verdict.PASSED, GpuCheck.verdict(Map.of("successful", 10, "aborted", 4)));
        assertEquals(GpuCheck.Verdict.PASSED, GpuCheck.verdict(Map.of("successful", 1, "skipped", 3)));
    }

    @Test
    void anyFailureFailsTheClassAndNothingRunIsASkip() {
        assertEquals(GpuCheck.Verdict.FAILED, GpuCheck.verdict(Map.of("successful", 10, "failed", 1)));
        assertEquals(GpuCheck.Verdict.FAILED, GpuCheck.verdict(Map.of("failed", 1, "aborted", 2)));
        assertEquals(GpuCheck.Verdict.SKIPPED, GpuCheck.verdict(Map.of("aborted", 2)));
        assertEquals(GpuCheck.Verdict.SKIPPED, GpuCheck.verdict(Map.of()));
    }
}
