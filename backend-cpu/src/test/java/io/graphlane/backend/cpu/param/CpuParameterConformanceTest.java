package io.graphlane.backend.cpu.param;

import io.graphlane.backend.cpu.CpuBackend;
import io.graphlane.backend.cpu.CpuExecutor;
import io.graphlane.backend.cpu.CpuWork;
import io.graphlane.core.backend.ParameterBackend;
import io.graphlane.core.tensor.TensorSpec;
import io.graphlane.testkit.conformance.ConformanceWork;
import io.graphlane.testkit.conformance.ConformanceWork.Gate;
import io.graphlane.testkit.conformance.ParameterConformanceSuite;
import java.nio.FloatBuffer;
import java.util.Optional;

/** The parameter laws on the CPU backend: a loading context is a lane, held by a latch its worker waits on. */
class CpuParameterConformanceTest extends ParameterConformanceSuite<CpuExecutor, CpuParameter, CpuWeight, CpuMaterialization> {
    private final ConformanceWork<CpuWork> work = ConformanceWork.onHostThread(CpuWork.NOOP, action -> action::run);
    private CpuBackend device;

    @Override
    protected ParameterBackend<CpuExecutor, CpuParameter, CpuWeight, CpuMaterialization> createBackend() {
        device = new CpuBackend("cpu-param-conformance");
        return new CpuParameterBackend(device);
    }

    @Override
    protected CpuExecutor newContext() {
        return device.forkExecutors(device.rootExecutor(), 1).get(0);
    }

    @Override
    protected Gate<?> hold(CpuExecutor context, String name) {
        Gate<CpuWork> gate = work.gate(name);
        device.submit(context, gate.work());
        return gate;
    }

    @Override
    protected float[] read(CpuWeight weight) {
        FloatBuffer floats = weight.floats();
        float[] out = new float[floats.remaining()];
        floats.get(out);
        return out;
    }

    @Override
    protected TensorSpec spec(CpuWeight weight) {
        return weight.spec();
    }

    @Override
    protected boolean sharesStorage(CpuWeight a, CpuWeight b) {
        return a.storage() == b.storage();
    }

    @Override
    protected void close(CpuWeight weight) {
        weight.close();
    }

    @Override
    protected CpuParameter parameter(String name, TensorSpec spec) {
        return new CpuParameter(name, spec);
    }

    @Override
    protected Optional<CpuWeight> bound(CpuParameter parameter) {
        return parameter.isBound() ? Optional.of(parameter.weight()) : Optional.empty();
    }

    @Override
    protected void unbind(CpuParameter parameter) {
        parameter.close();
    }

    @Override
    protected void stopBackend() {
        device.close();
    }
}
