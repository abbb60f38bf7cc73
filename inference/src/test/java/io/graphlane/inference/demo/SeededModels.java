package io.graphlane.inference.demo;

import io.graphlane.inference.llama.LlamaConfig;
import java.nio.file.Path;

/** Seeded F32 models of any shape, for tests in other packages. */
public final class SeededModels {
    private SeededModels() {
    }

    /** {@code dir} holding a seeded F32 model of {@code config}, written first if it is not there yet. */
    public static Path write(Path dir, LlamaConfig config) {
        return DemoModel.ensure(dir, config, DemoModel.SEED);
    }
}
