package io.graphlane.testkit.sim;

import io.graphlane.testkit.conformance.ConformanceWork;

/** Conformance work on the simulated device: a gate is held work that the test releases. */
final class SimConformanceWork {
    private SimConformanceWork() {
    }

    static ConformanceWork<SimWork> of(SimBackend sim) {
        return new ConformanceWork<>() {
            @Override
            public SimWork noop() {
                return SimWork.instant();
            }

            @Override
            public SimWork failing(RuntimeException cause) {
                return SimWork.failing(cause);
            }

            @Override
            public SimWork marker(Runnable onReached) {
                return SimWork.calling(onReached);
            }

            @Override
            public Gate<SimWork> gate(String name) {
                return Gate.of(SimWork.held(name), () -> sim.release(name));
            }
        };
    }
}
