package io.graphlane.backend.gpu;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The CUDA library search: the loader's folders first, then the lib folders of the nvidia wheels that python3
 * reports (here a stand-in script printing a fake site-packages), and one line saying where it looked.
 */
class NativeLibrarySearchTest {
    @TempDir
    Path dir;

    private Path fakeWheels() throws IOException {
        Path nvidia = dir.resolve("site-packages/nvidia");
        Files.createDirectories(nvidia.resolve("cu13/lib"));
        Files.createDirectories(nvidia.resolve("nccl/lib"));
        Files.createDirectories(nvidia.resolve("no_lib_here"));
        Files.writeString(nvidia.resolve("cu13/lib/libcublas.so.13"), "");
        Files.writeString(nvidia.resolve("nccl/lib/libnccl.so.2"), "");
        Path python = dir.resolve("python3");
        Files.writeString(python, "#!/bin/sh\necho " + nvidia + "\n");
        Files.setPosixFilePermissions(python, PosixFilePermissions.fromString("rwxr-xr-x"));
        return python;
    }

    @Test
    void theWheelLibFoldersOfPythonsNvidiaPackageAreSearchedAfterTheLoaderPath() throws IOException {
        Path python = fakeWheels();
        Path loader = Files.createDirectories(dir.resolve("loader"));
        NativeLibrarySearch.WheelFolders wheels = NativeLibrarySearch.WheelFolders.fromPython(python.toString());
        assertEquals(List.of(dir.resolve("site-packages/nvidia/cu13/lib"), dir.resolve("site-packages/nvidia/nccl/lib")), wheels.folders());

        NativeLibrarySearch search = new NativeLibrarySearch(List.of(loader), wheels);
        assertEquals(Optional.of(dir.resolve("site-packages/nvidia/cu13/lib/libcublas.so.13")), search.find("libcublas.so.13"));
        assertEquals(Optional.of(dir.resolve("site-packages/nvidia/nccl/lib/libnccl.so.2")), search.find("libnccl.so.2"));
        assertEquals(Optional.empty(), search.find("libnvrtc.so.13"));

        Files.writeString(loader.resolve("libcublas.so.13"), "");
        assertEquals(Optional.of(loader.resolve("libcublas.so.13")), search.find("libcublas.so.13"), "the loader path wins");
        String where = search.whereLooked();
        assertTrue(where.contains(loader.toString()) && where.contains("nvidia/cu13/lib") && !where.contains("\n"), where);
    }

    @Test
    void aMissingPythonOrNvidiaPackageIsNamedInWhereItLooked() throws IOException {
        NativeLibrarySearch.WheelFolders none = NativeLibrarySearch.WheelFolders.fromPython(dir.resolve("no-such-python").toString());
        assertTrue(none.folders().isEmpty());
        assertTrue(none.describe().contains("no-such-python not found on PATH"), none.describe());

        Path failing = dir.resolve("python-without-nvidia");
        Files.writeString(failing, "#!/bin/sh\necho \"ModuleNotFoundError: No module named 'nvidia'\" >&2\nexit 1\n");
        Files.setPosixFilePermissions(failing, PosixFilePermissions.fromString("rwxr-xr-x"));
        NativeLibrarySearch.WheelFolders without = NativeLibrarySearch.WheelFolders.fromPython(failing.toString());
        assertTrue(without.describe().contains("has no nvidia package: ModuleNotFoundError"), without.describe());
    }

    @Test
    void aMissingSharedObjectIsNamedWithWhereTheSearchLookedInOneLine() throws IOException {
        NativeLibrarySearch search = new NativeLibrarySearch(List.of(dir), NativeLibrarySearch.WheelFolders.fromPython(fakeWheels().toString()));
        Optional<GpuUnavailableException> missing = CudaLibraries.loadSharedObjects(CudaLibrary.CUBLAS, search);
        assertTrue(missing.isPresent());
        String message = missing.get().getMessage();
        assertTrue(message.startsWith("GPU backend unavailable: cuBLAS could not be loaded (libcuda.so.1, libcudart.so."), message);
        assertTrue(message.contains("libcublasLt.so." + CudaBuild.cudaMajor() + " not found; looked in the loader path (" + dir), message);
        assertTrue(message.contains("--backend cpu") && !message.contains("\n"), message);
    }

    @Test
    void backendNamesAreUniquePerInstanceOnADevice() {
        assertEquals("cuda0", CudaDeviceRuntime.instanceName(0, 1));
        assertEquals("cuda0#2", CudaDeviceRuntime.instanceName(0, 2));
        assertEquals("cuda3#7", CudaDeviceRuntime.instanceName(3, 7));
    }
}
