package io.graphlane.backend.gpu.param;

import io.graphlane.backend.gpu.CudaLibrary;
import io.graphlane.backend.gpu.GpuBackend;
import io.graphlane.backend.gpu.GpuConformanceWork;
import io.graphlane.backend.gpu.GpuStream;
import io.graphlane.backend.gpu.GpuWork;
import io.graphlane.backend.gpu.nn.GpuKernels;
import io.graphlane.core.backend.ParameterBackend;
import io.graphlane.core.tensor.DType;
import io.graphlane.core.tensor.TensorSpec;
import io.graphlane.testkit.conformance.ConformanceWork.Gate;
import io.graphlane.testkit.conformance.ParameterConformanceSuite;
import java.util.Optional;
import org.junit.jupiter.api.AfterAll;

/**
 * The parameter laws on a real CUDA device: a loading context is a stream, held by a stream wait on a
 * host-written flag ({@link GpuConformanceWork}); values are read back with a synchronous device-to-host
 * copy once the materialization finished. Skipped, with the reason, where no CUDA driver, device or NVRTC
 * (which compiles the widening kernels) is present.
 *
 * <p>Each test gets a parameter backend of its own (its own staging thread) and new lanes, on one device
 * opened for the class: compiling the kernels once per test would cost seconds each and prove nothing more.
 */
class GpuParameterConformanceTest extends ParameterConformanceSuite<GpuStream, GpuParameter, GpuWeight, GpuMaterialization> {
    private static GpuBackend device;
    private static GpuKernels kernels;
    private GpuParameterBackend parameters;

    @Override
    protected ParameterBackend<GpuStream, GpuParameter, GpuWeight, GpuMaterialization> createBackend() {
        if (device == null) {
            device = GpuConformanceWork.openTestDevice("the GPU parameter conformance suite", CudaLibrary.NVRTC);
            kernels = GpuKernels.compile(device);
        }
        parameters = new GpuParameterBackend(device, kernels);
        return parameters;
    }

    @AfterAll
    static void closeDevice() {
        if (device != null) {
            device.close();
            device = null;
        }
    }

    @Override
    protected GpuStream newContext() {
        return device.forkExecutors(device.rootExecutor(), 1).get(0);
    }

    @Override
    protected Gate<?> hold(GpuStream context, String name) {
        Gate<GpuWork> gate = GpuConformanceWork.of(device).gate(name);
        device.submit(context, gate.work());
        return gate;
    }

    @Override
    protected float[] read(GpuWeight weight) {
        if (weight.spec().dtype() != DType.F32) {
            throw new AssertionError(weight + " is not F32 on the device");
        }
        return GpuConformanceWork.readFloats(device, weight.pointer(), Math.toIntExact(weight.spec().shape().elementCount()));
    }

    @Override
    protected TensorSpec spec(GpuWeight weight) {
        return weight.spec();
    }

    @Override
    protected boolean sharesStorage(GpuWeight a, GpuWeight b) {
        return a.sharesStorageWith(b);
    }

    @Override
    protected void close(GpuWeight weight) {
        weight.close();
    }

    @Override
    protected GpuParameter parameter(String name, TensorSpec spec) {
        return new GpuParameter(name, spec);
    }

    @Override
    protected Optional<GpuWeight> bound(GpuParameter parameter) {
        return parameter.weight();
    }

    @Override
    protected void unbind(GpuParameter parameter) {
        parameter.weight().ifPresent(GpuWeight::close);
    }

    @Override
    protected void stopBackend() {
        if (parameters != null) {
            parameters.close();
        }
    }
}
