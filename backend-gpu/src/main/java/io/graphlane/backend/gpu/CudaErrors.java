package io.graphlane.backend.gpu;

import jcuda.driver.CUresult;

/** Names and classifies CUDA driver API results without touching any native library. */
final class CudaErrors {
    private CudaErrors() {
    }

    /** The symbolic name of a CUresult, such as {@code CUDA_ERROR_ILLEGAL_ADDRESS}. */
    static String name(int code) {
        return CUresult.stringFor(code);
    }

    /**
     * True for the errors after which the CUDA context is corrupted and every later call on it
     * fails: faults inside kernels, launch failures and timeouts, uncorrectable ECC errors.
     */
    static boolean isSticky(int code) {
        return switch (code) {
            case CUresult.CUDA_ERROR_ILLEGAL_ADDRESS,
                    CUresult.CUDA_ERROR_LAUNCH_TIMEOUT,
                    CUresult.CUDA_ERROR_ASSERT,
                    CUresult.CUDA_ERROR_HARDWARE_STACK_ERROR,
                    CUresult.CUDA_ERROR_ILLEGAL_INSTRUCTION,
                    CUresult.CUDA_ERROR_MISALIGNED_ADDRESS,
                    CUresult.CUDA_ERROR_INVALID_ADDRESS_SPACE,
                    CUresult.CUDA_ERROR_INVALID_PC,
                    CUresult.CUDA_ERROR_LAUNCH_FAILED,
                    CUresult.CUDA_ERROR_ECC_UNCORRECTABLE,
                    CUresult.CUDA_ERROR_CONTEXT_IS_DESTROYED -> true;
            default -> false;
        };
    }

    /** Throws a {@link CudaException} naming {@code call} and {@code where} unless {@code result} is success. */
    static void check(int result, String call, String where) {
        if (result != CUresult.CUDA_SUCCESS) {
            throw new CudaException(where, call, result);
        }
    }
}
