package io.graphlane.backend.gpu.nn;

import io.graphlane.backend.gpu.CudaLibraries;
import io.graphlane.backend.gpu.CudaLibrary;
import io.graphlane.backend.gpu.GpuDeviceInfo;
import io.graphlane.core.GraphlaneException;
import java.util.List;
import jcuda.nvrtc.JNvrtc;
import jcuda.nvrtc.nvrtcProgram;
import jcuda.nvrtc.nvrtcResult;

/** Compiles CUDA C to a cubin for one device with NVRTC; a compile error carries NVRTC's log. */
final class NvrtcCompiler {
    private NvrtcCompiler() {
    }

    /**
     * The cubin of {@code source} for {@code device}'s architecture.
     *
     * @throws io.graphlane.backend.gpu.GpuUnavailableException if libnvrtc.so.12 does not load
     * @throws GraphlaneException with the compiler log if the source does not compile
     */
    static byte[] compile(String fileName, String source, GpuDeviceInfo device) {
        CudaLibraries.require(CudaLibrary.NVRTC);
        JNvrtc.setExceptionsEnabled(false);
        nvrtcProgram program = new nvrtcProgram();
        check(JNvrtc.nvrtcCreateProgram(program, source, fileName, 0, null, null), "nvrtcCreateProgram", fileName);
        try {
            List<String> options = KernelSources.compileOptions(device.computeMajor(), device.computeMinor());
            int compiled = JNvrtc.nvrtcCompileProgram(program, options.size(), options.toArray(String[]::new));
            if (compiled != nvrtcResult.NVRTC_SUCCESS) {
                String[] log = new String[1];
                JNvrtc.nvrtcGetProgramLog(program, log);
                throw new GraphlaneException("NVRTC could not compile " + fileName + " for " + device.smArchitecture() + " ("
                        + nvrtcResult.stringFor(compiled) + "):\n" + log[0]);
            }
            long[] size = new long[1];
            check(JNvrtc.nvrtcGetCUBINSize(program, size), "nvrtcGetCUBINSize", fileName);
            byte[] cubin = new byte[Math.toIntExact(size[0])];
            check(JNvrtc.nvrtcGetCUBIN(program, cubin), "nvrtcGetCUBIN", fileName);
            return cubin;
        } finally {
            JNvrtc.nvrtcDestroyProgram(program);
        }
    }

    private static void check(int result, String call, String fileName) {
        if (result != nvrtcResult.NVRTC_SUCCESS) {
            throw new GraphlaneException(call + " failed for " + fileName + ": " + nvrtcResult.stringFor(result));
        }
    }
}
