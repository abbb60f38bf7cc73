package io.graphlane.backend.gpu.param;

import io.graphlane.backend.gpu.DeviceBuffer;
import io.graphlane.backend.gpu.GpuBackend;
import io.graphlane.backend.gpu.GpuCompletion;
import io.graphlane.backend.gpu.GpuStream;
import io.graphlane.backend.gpu.GpuWork;
import io.graphlane.backend.gpu.PinnedBuffer;
import io.graphlane.core.GraphlaneException;
import io.graphlane.core.backend.TransferBackend;
import io.graphlane.core.completion.Completion;
import jcuda.driver.CUresult;
import jcuda.driver.JCudaDriver;

/**
 * Promotes pinned host tensors to device weights and demotes device weights to pinned host
 * copies, each one asynchronous copy on the given lane. The copy holds handles of its own on the
 * source and the destination until its exact completion, so a caller that closes its handles early
 * never frees memory under a running copy. The destination is usable only after the copy's
 * completion succeeded; on failure the caller's destination handle is closed after that completion,
 * and the source (for a demotion, the device copy) stays as it was.
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
        GpuHostTensor source = host.share(); // the host copy stays until this copy has completed, whatever its caller does
        GpuWeight weight;
        try {
            weight = GpuWeight.own(host.name(), host.spec(), DeviceBuffer.allocate(lane, host.spec().byteSize()));
        } catch (RuntimeException | Error e) {
            source.close();
            throw e;
        }
        GpuWeight destination = weight.share();
        long bytes = host.spec().byteSize();
        GpuCompletion copy = submit(lane, stream -> check(JCudaDriver.cuMemcpyHtoDAsync(destination.pointer(), source.buffer().pointer(),
                bytes, stream.cuStream()), "promote " + host.name()), source, destination, weight);
        freeOnFailure(lane, copy, weight);
        return new InFlight<>(weight, copy);
    }

    @Override
    public Transfer<GpuHostTensor> demote(GpuStream lane, GpuWeight weight) {
        GpuWeight source = weight.share(); // the device copy stays at least until the host copy has completed
        GpuHostTensor host;
        try {
            host = new GpuHostTensor(weight.name(), weight.spec(), PinnedBuffer.allocate(device, weight.spec().byteSize()));
        } catch (RuntimeException | Error e) {
            source.close();
            throw e;
        }
        GpuHostTensor destination = host.share();
        long bytes = weight.spec().byteSize();
        GpuCompletion copy = submit(lane, stream -> check(JCudaDriver.cuMemcpyDtoHAsync(destination.buffer().pointer(), source.pointer(),
                bytes, stream.cuStream()), "demote " + weight.name()), source, destination, host);
        freeOnFailure(lane, copy, host);
        return new InFlight<>(host, copy);
    }

    /**
     * Submits {@code copy} and retains the copy's own handles on {@code source} and {@code destination} until it completes;
     * if the submission itself is refused, closes them and the caller's {@code published} handle before rethrowing.
     */
    private GpuCompletion submit(GpuStream lane, GpuWork copy, AutoCloseable source, AutoCloseable destination, AutoCloseable published) {
        GpuCompletion completion;
        try {
            completion = device.submit(lane, copy);
        } catch (RuntimeException | Error e) {
            closeAll(e, source, destination, published);
            throw e;
        }
        device.retainUntilComplete(lane, completion, source);
        device.retainUntilComplete(lane, completion, destination);
        return completion;
    }

    private static void closeAll(Throwable primary, AutoCloseable... handles) {
        for (AutoCloseable handle : handles) {
            try {
                handle.close();
            } catch (Exception e) {
                primary.addSuppressed(e);
            }
        }
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
