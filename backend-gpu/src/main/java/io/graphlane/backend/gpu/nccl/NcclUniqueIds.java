package io.graphlane.backend.gpu.nccl;

import io.graphlane.backend.gpu.CudaLibraries;
import io.graphlane.backend.gpu.CudaLibrary;
import org.bytedeco.cuda.global.nccl;
import org.bytedeco.cuda.nccl.ncclUniqueId;

/**
 * The {@code ncclUniqueId} that rank 0 creates and shares with every member (as plain bytes, so
 * it can travel in a message) before they create their communicators.
 */
public final class NcclUniqueIds {
    /** NCCL_UNIQUE_ID_BYTES. */
    public static final int BYTES = 128;

    private NcclUniqueIds() {
    }

    /** A fresh id, to be created by rank 0 only. */
    public static byte[] generate() {
        CudaLibraries.require(CudaLibrary.NCCL);
        ncclUniqueId id = new ncclUniqueId();
        NcclCommunicator.check(nccl.ncclGetUniqueId(id), "ncclGetUniqueId", 0);
        byte[] bytes = new byte[BYTES];
        for (int i = 0; i < BYTES; i++) {
            bytes[i] = id.internal(i);
        }
        return bytes;
    }

    /** Refuses bytes that cannot be an id, naming the expected and found length. */
    static void validate(byte[] bytes) {
        if (bytes == null || bytes.length != BYTES) {
            throw new IllegalArgumentException("an ncclUniqueId is " + BYTES + " bytes, got " + (bytes == null ? "none" : bytes.length + " bytes"));
        }
    }

    static ncclUniqueId toNative(byte[] bytes) {
        validate(bytes);
        ncclUniqueId id = new ncclUniqueId();
        for (int i = 0; i < BYTES; i++) {
            id.internal(i, bytes[i]);
        }
        return id;
    }
}
