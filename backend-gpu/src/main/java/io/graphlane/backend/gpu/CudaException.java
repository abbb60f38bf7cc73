package io.graphlane.backend.gpu;

import io.graphlane.core.GraphlaneException;

/**
 * A CUDA call returned an error: names the call, the device or lane, the CUDA error name and
 * its number. {@link #isSticky()} tells whether the error corrupts the CUDA context (as an
 * illegal address in a kernel does), after which no later work on that device can be proven.
 */
public class CudaException extends GraphlaneException {
    private static final long serialVersionUID = 1L;

    private final int code;
    private final boolean sticky;

    CudaException(String where, String call, int code) {
        super(call + " failed on " + where + ": " + CudaErrors.name(code) + " (" + code + ")"
                + (CudaErrors.isSticky(code) ? "; the CUDA context of this device is lost, restart the process" : ""));
        this.code = code;
        this.sticky = CudaErrors.isSticky(code);
    }

    /** The CUresult (driver API) number. */
    public int code() {
        return code;
    }

    /** True when this error leaves the device's context unusable, so no later completion on it can be proven. */
    public boolean isSticky() {
        return sticky;
    }
}
