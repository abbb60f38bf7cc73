package io.graphlane.backend.gpu.param;

import io.graphlane.backend.gpu.GpuBackend;
import io.graphlane.backend.gpu.GpuCompletion;
import io.graphlane.backend.gpu.GpuConformanceWork;
import io.graphlane.backend.gpu.GpuStream;
import io.graphlane.backend.gpu.GpuWork;
import io.graphlane.backend.gpu.PinnedBuffer;
import io.graphlane.core.backend.TransferBackend;
import io.graphlane.core.tensor.DType;
import io.graphlane.core.tensor.TensorSpec;
import io.graphlane.testkit.conformance.ConformanceWork;
import io.graphlane.testkit.conformance.ConformanceWork.Gate;
import io.graphlane.testkit.conformance.TransferConformanceSuite;

/**
 * The transfer laws on a real CUDA device: copies between pinned host tensors and device weights on
 * streams held by stream waits on host-written flags ({@link GpuConformanceWork}); device values are read
 * back with a synchronous device-to-host copy once the copy completed. Skipped, with the reason, where no
 * CUDA driver or device is present.
 */
class GpuTransferConformanceTest extends TransferConformanceSuite<GpuStream, GpuWeight, GpuHostTensor> {
    private GpuBackend device;
    private ConformanceWork<GpuWork> work;

    @Override
    protected TransferBackend<GpuStream, GpuWeight, GpuHostTensor> createBackend() {
        device = GpuConformanceWork.openTestDevice("the GPU transfer conformance suite");
        work = GpuConformanceWork.of(device);
        return new GpuTransferBackend(device);
    }

    @Override
    protected GpuStream newLane() {
        return device.forkExecutors(device.rootExecutor(), 1).get(0);
    }

    @Override
    protected Gate<?> hold(GpuStream lane, String name) {
        Gate<GpuWork> gate = work.gate(name);
        device.submit(lane, gate.work());
        return gate;
    }

    @Override
    protected void failNextCopyOn(GpuStream lane) {
        GpuCompletion failed = device.submit(newLane(), work.failing(new IllegalStateException("producer of the next copy failed")));
        awaitOutcome(failed); // known failed: the next copy on the lane is refused before anything is enqueued
        device.orderAfter(failed, lane);
    }

    @Override
    protected GpuHostTensor host(String name, float[] values) {
        PinnedBuffer pinned = PinnedBuffer.allocate(device, values.length * (long) Float.BYTES);
        pinned.buffer().asFloatBuffer().put(values);
        return new GpuHostTensor(name, TensorSpec.of(DType.F32, values.length), pinned);
    }

    @Override
    protected float[] read(GpuHostTensor host) {
        float[] out = new float[Math.toIntExact(host.spec().shape().elementCount())];
        host.buffer().buffer().asFloatBuffer().get(out);
        return out;
    }

    @Override
    protected float[] readDevice(GpuWeight weight) {
        return GpuConformanceWork.readFloats(device, weight.pointer(), Math.toIntExact(weight.spec().shape().elementCount()));
    }

    @Override
    protected void close(GpuHostTensor host) {
        host.close();
    }

    @Override
    protected void closeDevice(GpuWeight weight) {
        weight.close();
    }

    @Override
    protected boolean isFreed(GpuHostTensor host) {
        return host.buffer().isFreed();
    }

    @Override
    protected boolean isFreedDevice(GpuWeight weight) {
        return weight.storage().isFreed();
    }

    @Override
    protected void stopBackend() {
        if (device != null) {
            device.close();
        }
    }
}
