package io.graphlane.backend.gpu.param;

import io.graphlane.backend.gpu.DeviceBuffer;
import io.graphlane.backend.gpu.GpuBackend;
import io.graphlane.backend.gpu.GpuCompletion;
import io.graphlane.backend.gpu.GpuStream;
import io.graphlane.backend.gpu.PinnedBuffer;
import io.graphlane.core.GraphlaneException;
import io.graphlane.core.backend.TransferBackend;
import io.graphlane.core.completion.Completion;
import jcuda.driver.CUresult;
import jcuda.driver.JCudaDriver;

/**
 * Promotes pinned host tensors to device weights and demotes device weights to pinned host
 * copies, each one asynchronous copy on the given lane. The destination is usable only after
 * the copy's completion succeeded; on failure it is freed after that completion, and the source
 * (for a demotion, the device copy) stays as it was.
 */
public final class GpuTransferBackend implements TransferBackend<GpuStream, GpuWeight, GpuHostTensor> {
    private final GpuBackend device;

    public GpuTransferBackend(GpuBackend device) {
        this.device = device;
    }

    /** A copy in flight. */
    private record InFlight<D>(D destination, Completion completion) implements Transfer<D> {
    }

    @Override
    public Transfer<GpuWeight> promote(GpuStream lane, GpuHostTensor host) {
        GpuWeight weight = GpuWeight.own(host.name(), host.spec(), DeviceBuffer.allocate(lane, host.spec().byteSize()));
        GpuCompletion copy = device.submit(lane, stream -> check(JCudaDriver.cuMemcpyHtoDAsync(weight.pointer(), host.buffer().pointer(),
                host.spec().byteSize(), stream.cuStream()), "promote " + host.name()));
        freeOnFailure(lane, copy, weight);
        return new InFlight<>(weight, copy);
    }

    @Override
    public Transfer<GpuHostTensor> demote(GpuStream lane, GpuWeight weight) {
        GpuHostTensor host = new GpuHostTensor(weight.name(), weight.spec(), PinnedBuffer.allocate(device, weight.spec().byteSize()));
        GpuWeight source = weight.share(); // the device copy stays at least until the host copy has completed
        GpuCompletion copy = device.submit(lane, stream -> check(JCudaDriver.cuMemcpyDtoHAsync(host.buffer().pointer(), source.pointer(),
                weight.spec().byteSize(), stream.cuStream()), "demote " + weight.name()));
        device.retainUntilComplete(lane, copy, source);
        freeOnFailure(lane, copy, host);
        return new InFlight<>(host, copy);
    }

    private void freeOnFailure(GpuStream lane, GpuCompletion copy, AutoCloseable destination) {
        copy.whenDone(outcome -> {
            if (!outcome.isSuccess()) {
                device.retainUntilComplete(lane, copy, destination);
            }
        });
    }

    private static void check(int result, String what) {
        if (result != CUresult.CUDA_SUCCESS) {
            throw new GraphlaneException(what + " failed: " + CUresult.stringFor(result) + " (" + result + ")");
        }
    }
}
