package io.graphlane.backend.gpu.nccl;

import io.graphlane.backend.gpu.CudaLibraries;
import io.graphlane.backend.gpu.CudaLibrary;
import io.graphlane.backend.gpu.GpuBackend;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.bytedeco.cuda.global.nccl;
import org.bytedeco.cuda.nccl.ncclComm;

/**
 * One member's NCCL communicator on one GPU, created from the id rank 0 shared. Every collective
 * first passes the group's {@link DescriptorConsensus}, then is enqueued on the caller's lane.
 */
public final class NcclCommunicator implements AutoCloseable {
    private final GpuBackend device;
    private final ncclComm comm;
    private final int size;
    private final int rank;
    private final DescriptorConsensus consensus;
    private final AtomicLong sequence = new AtomicLong();
    private final AtomicBoolean closed = new AtomicBoolean();

    private NcclCommunicator(GpuBackend device, ncclComm comm, int size, int rank, DescriptorConsensus consensus) {
        this.device = device;
        this.comm = comm;
        this.size = size;
        this.rank = rank;
        this.consensus = consensus;
    }

    /**
     * Joins the group of {@code size} members as {@code rank}; blocks until every member has joined
     * (call it from a non-actor thread).
     *
     * @throws io.graphlane.backend.gpu.GpuUnavailableException if libnccl.so.2 does not load
     * @throws NcclException with NCCL's error string if NCCL refuses
     */
    public static NcclCommunicator create(GpuBackend device, byte[] uniqueId, int size, int rank, DescriptorConsensus consensus) {
        validateMembership(size, rank);
        NcclUniqueIds.validate(uniqueId);
        CudaLibraries.require(CudaLibrary.NCCL);
        device.makeCurrent();
        ncclComm comm = new ncclComm();
        check(nccl.ncclCommInitRank(comm, size, NcclUniqueIds.toNative(uniqueId), rank), "ncclCommInitRank", rank);
        return new NcclCommunicator(device, comm, size, rank, consensus);
    }

    /** Refuses a group size below 1 or a rank outside it, naming both. */
    static void validateMembership(int size, int rank) {
        if (size < 1) {
            throw new IllegalArgumentException("NCCL group size must be >= 1, got " + size);
        }
        if (rank < 0 || rank >= size) {
            throw new IllegalArgumentException("NCCL rank " + rank + " is outside the group [0, " + size + ")");
        }
    }

    /** The number of members. */
    public int size() {
        return size;
    }

    /** This member's rank. */
    public int rank() {
        return rank;
    }

    /** The device this member runs on. */
    public GpuBackend device() {
        return device;
    }

    ncclComm comm() {
        return comm;
    }

    /** Agrees on the next collective with every member; throws the group's mismatch otherwise. */
    void agree(String operation, int rows, int cols) {
        CollectiveDescriptor mine = new CollectiveDescriptor(sequence.getAndIncrement(), operation, "F32", rows, cols);
        try {
            consensus.agree(rank, mine);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new NcclException("descriptor consensus for " + mine, rank, -1, "interrupted");
        }
    }

    static void check(int result, String call, int rank) {
        if (result != nccl.ncclSuccess) {
            throw new NcclException(call, rank, result, nccl.ncclGetErrorString(result).getString());
        }
    }

    /** Destroys the communicator once; call after the collectives on it have completed. */
    @Override
    public void close() {
        if (closed.compareAndSet(false, true)) {
            device.makeCurrent();
            check(nccl.ncclCommDestroy(comm), "ncclCommDestroy", rank);
        }
    }
}
