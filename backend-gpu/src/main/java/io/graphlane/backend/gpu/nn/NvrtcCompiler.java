package io.graphlane.backend.gpu.nn;

import static org.bytedeco.cuda.global.nvrtc.NVRTC_SUCCESS;

import io.graphlane.backend.gpu.CudaLibraries;
import io.graphlane.backend.gpu.CudaLibrary;
import io.graphlane.backend.gpu.GpuDeviceInfo;
import io.graphlane.core.GraphlaneException;
import java.util.List;
import org.bytedeco.cuda.global.nvrtc;
import org.bytedeco.cuda.nvrtc._nvrtcProgram;
import org.bytedeco.javacpp.BytePointer;
import org.bytedeco.javacpp.PointerPointer;
import org.bytedeco.javacpp.SizeTPointer;

/** Compiles CUDA C to a cubin for one device with NVRTC (through JavaCPP); a compile error carries NVRTC's log. */
final class NvrtcCompiler {
    private NvrtcCompiler() {
    }

    /**
     * The cubin of {@code source} for {@code device}'s architecture.
     *
     * @throws io.graphlane.backend.gpu.GpuUnavailableException if NVRTC does not load
     * @throws GraphlaneException with the compiler log if the source does not compile
     */
    static byte[] compile(String fileName, String source, GpuDeviceInfo device) {
        CudaLibraries.require(CudaLibrary.NVRTC);
        _nvrtcProgram program = new _nvrtcProgram();
        try (BytePointer src = new BytePointer(source); BytePointer name = new BytePointer(fileName)) {
            check(nvrtc.nvrtcCreateProgram(program, src, name, 0, (PointerPointer<?>) null, (PointerPointer<?>) null),
                    "nvrtcCreateProgram", fileName);
        }
        try {
            List<String> options = KernelSources.compileOptions(device.computeMajor(), device.computeMinor());
            int compiled;
            try (PointerPointer<BytePointer> argv = new PointerPointer<>(options.toArray(String[]::new))) {
                compiled = nvrtc.nvrtcCompileProgram(program, options.size(), argv);
            }
            if (compiled != NVRTC_SUCCESS) {
                throw new GraphlaneException("NVRTC could not compile " + fileName + " for " + device.smArchitecture() + " ("
                        + errorString(compiled) + "):\n" + log(program));
            }
            try (SizeTPointer size = new SizeTPointer(1)) {
                check(nvrtc.nvrtcGetCUBINSize(program, size), "nvrtcGetCUBINSize", fileName);
                byte[] cubin = new byte[Math.toIntExact(size.get())];
                check(nvrtc.nvrtcGetCUBIN(program, cubin), "nvrtcGetCUBIN", fileName);
                return cubin;
            }
        } finally {
            nvrtc.nvrtcDestroyProgram(program);
        }
    }

    private static String log(_nvrtcProgram program) {
        try (SizeTPointer size = new SizeTPointer(1)) {
            if (nvrtc.nvrtcGetProgramLogSize(program, size) != NVRTC_SUCCESS || size.get() <= 1) {
                return "(no log)";
            }
            byte[] log = new byte[Math.toIntExact(size.get())];
            nvrtc.nvrtcGetProgramLog(program, log);
            return new String(log, 0, log.length - 1, java.nio.charset.StandardCharsets.UTF_8);
        }
    }

    private static String errorString(int result) {
        BytePointer s = nvrtc.nvrtcGetErrorString(result);
        return s == null ? "NVRTC error " + result : s.getString();
    }

    private static void check(int result, String call, String fileName) {
        if (result != NVRTC_SUCCESS) {
            throw new GraphlaneException(call + " failed for " + fileName + ": " + errorString(result));
        }
    }
}
