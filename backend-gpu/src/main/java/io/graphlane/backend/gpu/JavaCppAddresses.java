package io.graphlane.backend.gpu;

import jcuda.GraphlaneNativeAccess;
import jcuda.driver.CUdeviceptr;
import jcuda.driver.CUstream;
import org.bytedeco.cuda.cudart.CUstream_st;
import org.bytedeco.javacpp.FloatPointer;
import org.bytedeco.javacpp.Pointer;

/**
 * Hands JCuda's device pointers and streams to JavaCPP's CUDA bindings (cuBLAS, NCCL) by raw
 * address. The JavaCPP pointers made here only designate memory or a stream that JCuda owns: they
 * never allocate or free anything.
 */
public final class JavaCppAddresses {
    private JavaCppAddresses() {
    }

    /** A JavaCPP pointer at the address {@code pointer} designates, plus {@code byteOffset}. */
    public static Pointer at(CUdeviceptr pointer, long byteOffset) {
        return new RawAddress(GraphlaneNativeAccess.address(pointer) + byteOffset);
    }

    /** A JavaCPP float pointer at the device address {@code pointer} designates. */
    public static FloatPointer floats(CUdeviceptr pointer) {
        return new FloatPointer(at(pointer, 0));
    }

    /** JCuda's {@code stream} as the runtime's stream handle. */
    public static CUstream_st stream(CUstream stream) {
        return new CUstream_st(new RawAddress(GraphlaneNativeAccess.handle(stream)));
    }

    /** A JavaCPP pointer at a raw device address or handle that JCuda owns; never deallocates anything. */
    private static final class RawAddress extends Pointer {
        RawAddress(long raw) {
            this.address = raw;
        }
    }
}
