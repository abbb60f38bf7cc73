package io.graphlane.backend.gpu.param;

import io.graphlane.core.completion.Completion;
import io.graphlane.core.completion.SettableCompletion;
import io.graphlane.core.param.EncodedLease;
import io.graphlane.core.param.Materialization;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;

/** An in-flight upload of one weight: owns its source leases until the upload's exact completion. */
public final class GpuMaterialization implements Materialization<GpuWeight> {
    private final String name;
    private final List<EncodedLease> leases;
    private final GpuWeight weight;
    private final SettableCompletion completion;
    private final AtomicBoolean leasesReleased = new AtomicBoolean();

    GpuMaterialization(String name, List<EncodedLease> leases, GpuWeight weight, SettableCompletion completion) {
        this.name = name;
        this.leases = List.copyOf(leases);
        this.weight = weight;
        this.completion = completion;
    }

    @Override
    public String name() {
        return name;
    }

    @Override
    public Completion completion() {
        return completion;
    }

    SettableCompletion settable() {
        return completion;
    }

    GpuWeight weight() {
        return weight;
    }

    /** Releases every source lease exactly once; only after {@link #completion()} has completed. */
    void releaseLeases() {
        if (!completion.isDone()) {
            throw new IllegalStateException("materialization of " + name + " is still running: its leases stay held");
        }
        if (leasesReleased.compareAndSet(false, true)) {
            for (EncodedLease lease : leases) {
                lease.release();
            }
        }
    }
}
