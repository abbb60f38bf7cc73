package io.graphlane.backend.gpu.nccl;

import io.graphlane.core.GraphlaneException;

/** An NCCL call failed: names the call, the rank and NCCL's own error string. */
public final class NcclException extends GraphlaneException {
    private static final long serialVersionUID = 1L;

    NcclException(String call, int rank, int code, String ncclMessage) {
        super(call + " failed on rank " + rank + ": " + ncclMessage + " (ncclResult " + code + ")");
    }
}
