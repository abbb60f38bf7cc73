package io.graphlane.backend.gpu;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeFalse;

import io.graphlane.core.GraphlaneException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * On a machine without a CUDA driver or CUDA libraries (this build's machine and CI), every
 * entry point fails with one clear, one-line error that names what is missing and suggests
 * {@code --backend cpu}, keeping the first loading failure as its cause on every touch.
 */
class GpuUnavailableTest {

    @Test
    void openingABackendWithoutADriverNamesLibcudaAndSuggestsTheCpuBackend() {
        assumeFalse(CudaLibraries.isAvailable(CudaLibrary.DRIVER), "a CUDA driver and device are present: nothing is unavailable here");
        GpuUnavailableException first = assertThrows(GpuUnavailableException.class, () -> GpuBackend.open(0));
        GpuUnavailableException again = assertThrows(GpuUnavailableException.class, () -> GpuBackend.open(0));

        assertInstanceOf(GraphlaneException.class, first);
        assertTrue(first.getMessage().startsWith("GPU backend unavailable: "), first.getMessage());
        assertTrue(first.getMessage().contains("--backend cpu"), first.getMessage());
        assertFalse(first.getMessage().contains("\n"), "one line: " + first.getMessage());
        assertEquals(first.getMessage(), again.getMessage(), "a later touch reports the same root cause");
        assertSame(first.getCause(), again.getCause(), "the first failure is kept, not a later 'Could not initialize class'");
        assertFalse(again.getMessage().contains("Could not initialize class"), again.getMessage());
        if (first.getCause() instanceof LinkageError) {
            assertTrue(first.getMessage().contains("libcuda.so.1 not found"), first.getMessage());
        }
    }

    @Test
    void deviceListingFailsWithTheSameErrorAsOpening() {
        assumeFalse(CudaLibraries.isAvailable(CudaLibrary.DRIVER), "a CUDA driver and device are present: nothing is unavailable here");
        GpuUnavailableException open = assertThrows(GpuUnavailableException.class, () -> GpuBackend.open(0));
        GpuUnavailableException list = assertThrows(GpuUnavailableException.class, GpuDevices::list);
        assertEquals(open.getMessage(), list.getMessage());
    }

    @ParameterizedTest
    @EnumSource(CudaLibrary.class)
    void eachMissingLibraryIsNamedOnceAndForAll(CudaLibrary library) {
        assumeFalse(CudaLibraries.isAvailable(library), library.sharedObject() + " loads on this machine: nothing to report");
        GpuUnavailableException first = assertThrows(GpuUnavailableException.class, () -> CudaLibraries.require(library));
        GpuUnavailableException again = assertThrows(GpuUnavailableException.class, () -> CudaLibraries.require(library));
        assertTrue(first.getMessage().contains(library.description()), first.getMessage());
        assertTrue(library.sharedObjects().stream().anyMatch(first.getMessage()::contains),
                "names one of " + library.sharedObjects() + ": " + first.getMessage());
        assertTrue(first.getMessage().contains("--backend cpu"), first.getMessage());
        assertFalse(first.getMessage().contains("\n"), "one line: " + first.getMessage());
        assertSame(first.getCause(), again.getCause());
        assertEquals(first.getMessage(), again.getMessage());
    }

    @Test
    void theMissingSharedObjectIsFoundDeepInANestedLoadingFailure() {
        UnsatisfiedLinkError inner = new UnsatisfiedLinkError(
                "/tmp/libJCublas2-12.6.0-linux-x86_64.so: libcublas.so.12: cannot open shared object file: No such file or directory");
        UnsatisfiedLinkError outer = new UnsatisfiedLinkError("Error while loading native library \"JCublas2-12.6.0-linux-x86_64\"\nOperating system name: Linux");
        outer.addSuppressed(inner);
        ExceptionInInitializerError wrapped = new ExceptionInInitializerError(outer);
        assertEquals("libcublas.so.12 not found", CudaLibraries.missingWhat(CudaLibrary.CUBLAS, wrapped));
    }

    @Test
    void aFailureWithoutAMissingObjectFallsBackToItsFirstLine() {
        UnsatisfiedLinkError error = new UnsatisfiedLinkError("no jninccl in java.library.path: /usr/lib\nmore detail");
        assertEquals("libnccl.so.2 or its JNI glue did not load: no jninccl in java.library.path: /usr/lib",
                CudaLibraries.missingWhat(CudaLibrary.NCCL, error));
    }

    @Test
    void anOrdinalOutOfRangeNamesTheOptionTheRangeAndTheValue() {
        GpuUnavailableException e = assertThrows(GpuUnavailableException.class, () -> GpuDevices.checkOrdinal(3, 2));
        assertTrue(e.getMessage().contains("--device 3"), e.getMessage());
        assertTrue(e.getMessage().contains("expected 0..1"), e.getMessage());
        assertTrue(e.getMessage().contains("2 visible CUDA devices"), e.getMessage());
        assertThrows(GpuUnavailableException.class, () -> GpuDevices.checkOrdinal(-1, 2));
        GpuDevices.checkOrdinal(1, 2);
    }

    @Test
    void optionsRefuseValuesThatCannotWorkNamingTheKey() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> GpuOptions.DEFAULTS.withStaging(1000, 2));
        assertTrue(e.getMessage().contains("graphlane.gpu.staging-chunk-bytes"), e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> GpuOptions.DEFAULTS.withDevice(-1));
        assertThrows(IllegalArgumentException.class, () -> GpuOptions.DEFAULTS.withStaging(4096, 0));
    }
}
