package io.graphlane.backend.gpu.nccl;

import io.graphlane.backend.gpu.DeviceBuffer;
import io.graphlane.backend.gpu.GpuStream;
import io.graphlane.backend.gpu.JavaCppAddresses;
import io.graphlane.backend.gpu.nn.GpuMatrix;
import io.graphlane.core.backend.CollectiveBackend;
import io.graphlane.core.completion.Completion;
import org.bytedeco.cuda.cudart.CUstream_st;
import org.bytedeco.cuda.global.nccl;
import org.bytedeco.javacpp.Pointer;

/**
 * Collectives over NCCL on the caller's lane (stream): the result is a new matrix whose readiness
 * is the completion of the enqueued collective. Every call first passes descriptor consensus.
 */
public final class GpuCollectives implements CollectiveBackend<GpuStream, GpuMatrix, NcclCommunicator> {

    /** A collective's output and its exact completion. */
    private record Done(GpuMatrix value, Completion completion) implements Result<GpuMatrix> {
    }

    @Override
    public Result<GpuMatrix> allReduce(GpuMatrix value, NcclCommunicator group, GpuStream lane) {
        group.agree("allReduce", value.rows(), value.cols());
        GpuMatrix out = allocate(group, lane, value.rows(), value.cols());
        Completion c = lane.backend().submit(lane, s -> NcclCommunicator.check(nccl.ncclAllReduce(address(value), address(out),
                value.elements(), nccl.ncclFloat32, nccl.ncclSum, group.comm(), stream(s)), "ncclAllReduce", group.rank()));
        return new Done(out, c);
    }

    @Override
    public Result<GpuMatrix> allGather(GpuMatrix value, NcclCommunicator group, GpuStream lane) {
        group.agree("allGather", value.rows(), value.cols());
        GpuMatrix out = allocate(group, lane, Math.multiplyExact(value.rows(), group.size()), value.cols());
        Completion c = lane.backend().submit(lane, s -> NcclCommunicator.check(nccl.ncclAllGather(address(value), address(out),
                value.elements(), nccl.ncclFloat32, group.comm(), stream(s)), "ncclAllGather", group.rank()));
        return new Done(out, c);
    }

    @Override
    public Result<GpuMatrix> allToAll(GpuMatrix value, NcclCommunicator group, GpuStream lane) {
        int parts = group.size();
        if (value.rows() % parts != 0) {
            throw new IllegalArgumentException("allToAll on rank " + group.rank() + ": " + value.rows()
                    + " rows do not split into " + parts + " equal partitions");
        }
        group.agree("allToAll", value.rows(), value.cols());
        GpuMatrix out = allocate(group, lane, value.rows(), value.cols());
        long partElements = value.elements() / parts;
        Completion c = lane.backend().submit(lane, s -> {
            NcclCommunicator.check(nccl.ncclGroupStart(), "ncclGroupStart", group.rank());
            try {
                for (int peer = 0; peer < parts; peer++) {
                    long offset = peer * partElements * Float.BYTES;
                    NcclCommunicator.check(nccl.ncclSend(address(value, offset), partElements, nccl.ncclFloat32, peer, group.comm(), stream(s)),
                            "ncclSend to " + peer, group.rank());
                    NcclCommunicator.check(nccl.ncclRecv(address(out, offset), partElements, nccl.ncclFloat32, peer, group.comm(), stream(s)),
                            "ncclRecv from " + peer, group.rank());
                }
            } finally {
                NcclCommunicator.check(nccl.ncclGroupEnd(), "ncclGroupEnd", group.rank());
            }
        });
        return new Done(out, c);
    }

    private static GpuMatrix allocate(NcclCommunicator group, GpuStream lane, int rows, int cols) {
        if (lane.backend() != group.device()) {
            throw new IllegalArgumentException("collective on " + lane.name() + " but rank " + group.rank() + " communicates on "
                    + group.device().deviceName());
        }
        return GpuMatrix.wrap(DeviceBuffer.allocate(lane, (long) rows * cols * Float.BYTES), rows, cols);
    }

    private static Pointer address(GpuMatrix m) {
        return address(m, 0);
    }

    private static Pointer address(GpuMatrix m, long byteOffset) {
        return JavaCppAddresses.at(m.pointer(), byteOffset);
    }

    private static CUstream_st stream(GpuStream lane) {
        return JavaCppAddresses.stream(lane.cuStream());
    }
}
