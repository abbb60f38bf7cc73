package io.graphlane.backend.cpu.transfer;

import io.graphlane.backend.cpu.CpuBackend;
import io.graphlane.backend.cpu.CpuCompletion;
import io.graphlane.backend.cpu.CpuExecutor;
import io.graphlane.backend.cpu.CpuWork;
import io.graphlane.backend.cpu.param.CpuStorage;
import io.graphlane.backend.cpu.param.CpuWeight;
import io.graphlane.core.backend.TransferBackend;
import io.graphlane.core.tensor.DType;
import io.graphlane.core.tensor.TensorSpec;
import io.graphlane.testkit.conformance.ConformanceWork;
import io.graphlane.testkit.conformance.ConformanceWork.Gate;
import io.graphlane.testkit.conformance.TransferConformanceSuite;
import java.nio.FloatBuffer;

/** The transfer laws on the CPU backend: copies between host memory and a budgeted pool, on lanes held by latches. */
class CpuTransferConformanceTest extends TransferConformanceSuite<CpuExecutor, CpuWeight, CpuHostBuffer> {
    private final ConformanceWork<CpuWork> work = ConformanceWork.onHostThread(CpuWork.NOOP, action -> action::run);
    private CpuBackend device;

    @Override
    protected TransferBackend<CpuExecutor, CpuWeight, CpuHostBuffer> createBackend() {
        device = new CpuBackend("cpu-transfer-conformance");
        return new CpuTransferBackend(device, new CpuDevicePool("cpu-transfer-conformance/device", 1 << 20));
    }

    @Override
    protected CpuExecutor newLane() {
        return device.forkExecutors(device.rootExecutor(), 1).get(0);
    }

    @Override
    protected Gate<?> hold(CpuExecutor lane, String name) {
        Gate<CpuWork> gate = work.gate(name);
        device.submit(lane, gate.work());
        return gate;
    }

    @Override
    protected void failNextCopyOn(CpuExecutor lane) {
        CpuExecutor producerLane = newLane();
        CpuCompletion failed = device.submit(producerLane, work.failing(new IllegalStateException("producer of the next copy failed")));
        device.orderAfter(failed, lane);
    }

    @Override
    protected CpuHostBuffer host(String name, float[] values) {
        CpuStorage storage = CpuStorage.allocate(name, values.length * (long) Float.BYTES);
        storage.buffer().asFloatBuffer().put(values);
        return new CpuHostBuffer(new CpuWeight(name, TensorSpec.of(DType.F32, values.length), storage));
    }

    @Override
    protected float[] read(CpuHostBuffer host) {
        return floats(host.weight().floats());
    }

    @Override
    protected float[] readDevice(CpuWeight weight) {
        return floats(weight.floats());
    }

    @Override
    protected void close(CpuHostBuffer host) {
        if (!host.weight().isClosed()) {
            host.close();
        }
    }

    @Override
    protected void closeDevice(CpuWeight weight) {
        if (!weight.isClosed()) {
            weight.close();
        }
    }

    @Override
    protected boolean isFreed(CpuHostBuffer host) {
        return host.weight().storage().isFreed();
    }

    @Override
    protected boolean isFreedDevice(CpuWeight weight) {
        return weight.storage().isFreed();
    }

    @Override
    protected void stopBackend() {
        device.close();
    }

    private static float[] floats(FloatBuffer buffer) {
        float[] out = new float[buffer.remaining()];
        buffer.get(out);
        return out;
    }
}
