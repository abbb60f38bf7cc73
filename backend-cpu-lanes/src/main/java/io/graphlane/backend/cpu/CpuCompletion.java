package io.graphlane.backend.cpu;

import io.graphlane.core.completion.SettableCompletion;

/** The exact completion of one CPU submission, recorded by the lane's worker thread. */
public final class CpuCompletion extends SettableCompletion {
    private final CpuBackend device;

    CpuCompletion(CpuBackend device, String label) {
        super(label);
        this.device = device;
    }

    /** The backend (device) whose worker records this completion. */
    CpuBackend device() {
        return device;
    }
}
