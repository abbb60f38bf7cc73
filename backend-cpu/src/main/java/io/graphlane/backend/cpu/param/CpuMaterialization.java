package io.graphlane.backend.cpu.param;

import io.graphlane.backend.cpu.CpuCompletion;
import io.graphlane.core.param.EncodedLease;
import io.graphlane.core.param.Materialization;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;

/**
 * One in-flight CPU materialization: the submission on the loading lane that realizes the weight,
 * its exact completion, and the encoded source leases it owns until
 * {@link CpuParameterBackend#finishMaterialization} releases them after that completion.
 */
public final class CpuMaterialization implements Materialization<CpuWeight> {
    private final String name;
    private final CpuCompletion completion;
    private final List<EncodedLease> leases;
    private final AtomicReference<CpuWeight> result;
    private final AtomicBoolean finished = new AtomicBoolean();

    CpuMaterialization(String name, CpuCompletion completion, List<EncodedLease> leases, AtomicReference<CpuWeight> result) {
        this.name = name;
        this.completion = completion;
        this.leases = List.copyOf(leases);
        this.result = result;
    }

    @Override
    public String name() {
        return name;
    }

    @Override
    public CpuCompletion completion() {
        return completion;
    }

    /** The names of the encoded source leases this materialization owns, for ledgers and errors. */
    public List<String> leaseNames() {
        return leases.stream().map(EncodedLease::name).toList();
    }

    /** True once {@link CpuParameterBackend#finishMaterialization} took this materialization's result. */
    public boolean isFinished() {
        return finished.get();
    }

    List<EncodedLease> leases() {
        return leases;
    }

    CpuWeight takeResult() {
        return result.getAndSet(null);
    }

    boolean markFinished() {
        return finished.compareAndSet(false, true);
    }

    @Override
    public String toString() {
        return "CpuMaterialization(" + name + ", " + completion + ")";
    }
}
