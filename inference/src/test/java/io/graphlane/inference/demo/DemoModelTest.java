package io.graphlane.inference.demo;

import io.graphlane.checkpoint.CheckpointSource;
import io.graphlane.checkpoint.Selection;
import io.graphlane.checkpoint.recipe.HalfPrecision;
import io.graphlane.core.tensor.DType;
import io.graphlane.inference.llama.LlamaTensors;
import io.graphlane.inference.weights.WeightFormat;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.graphlane.backend.cpu.nn.CpuTensor;
import io.graphlane.core.GraphlaneException;
import io.graphlane.inference.generate.StagedModel;
import io.graphlane.inference.llama.LlamaConfig;
import io.graphlane.inference.llama.Segment;
import io.graphlane.inference.llama.TestModels;
import io.graphlane.inference.model.CpuModels;
import io.graphlane.inference.model.ModelDirectory;
import io.graphlane.inference.tokenizer.TextTokenizer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The demo model's files: a loadable HF directory, written once, atomically, from a fixed seed. */
class DemoModelTest {
    private static final LlamaConfig TINY = TestModels.small(false, false);

    @Test
    void theWrittenDirectoryLoadsAndHoldsTheSeededWeights(@TempDir Path root) {
        Path dir = DemoModel.ensure(root.resolve("demo"), TINY, 77);
        ModelDirectory model = ModelDirectory.open(dir);
        assertEquals(TINY, model.config());
        int[] prompt = {1, 2, 3};
        float[] fromFiles;
        try (StagedModel<CpuTensor> staged = CpuModels.staged(model, 2)) {
            fromFiles = staged.step(List.of(new Segment(1, 0, 3)), prompt)[0];
        }
        try (StagedModel<CpuTensor> inMemory = TestModels.staged(TINY, SeededWeights.generate(TINY, 77), 1)) {
            assertArrayEquals(inMemory.step(List.of(new Segment(1, 0, 3)), prompt)[0], fromFiles, 0f);
        }
        try (TextTokenizer tokenizer = model.tokenizer()) {
            assertArrayEquals(new int[] {104, 105}, tokenizer.encode("hi"), "token id = byte");
        }
    }

    @Test
    void aBf16DemoHoldsTheSeededWeightsRoundedToBf16AndRunsWithThemKeptBf16(@TempDir Path root) {
        Path dir = DemoModel.ensure(root.resolve("demo-bf16"), TINY, 77, DType.BF16);
        ModelDirectory model = ModelDirectory.open(dir);
        try (CheckpointSource source = model.openSource(CheckpointSource.DEFAULT_MAX_OPEN_SHARDS)) {
            assertEquals(DType.BF16, source.spec(LlamaTensors.EMBEDDING, Selection.all()).dtype());
        }
        int[] prompt = {1, 2, 3};
        try (StagedModel<CpuTensor> widened = CpuModels.staged(model, 1, WeightFormat.F32);
             StagedModel<CpuTensor> bf16 = CpuModels.staged(model, 1, WeightFormat.STORED)) {
            CpuTensor embedding = widened.stages().get(0).weights().embedding();
            float[] seeded = SeededWeights.generate(TINY, 77).get(LlamaTensors.EMBEDDING);
            for (int i = 0; i < embedding.cols(); i++) {
                assertEquals(HalfPrecision.bf16ToF32(HalfPrecision.f32ToBf16(seeded[5 * embedding.cols() + i])), embedding.get(5, i),
                        "the seeded value rounded to BF16");
            }
            assertNotNull(bf16.stages().get(0).weights().layers().get(0).wq().packed(), "BF16 weights stay BF16");
            // the same BF16 values, widened once at load or inside the kernel: equal up to the order of the sums
            assertArrayEquals(widened.step(List.of(new Segment(1, 0, 3)), prompt)[0], bf16.step(List.of(new Segment(1, 0, 3)), prompt)[0],
                    1e-4f);
        }
    }

    @Test
    void anExistingModelIsReusedNotRewritten(@TempDir Path root) throws Exception {
        Path dir = DemoModel.ensure(root.resolve("demo"), TINY, 1);
        Path weights = dir.resolve("model.safetensors");
        FileTime old = FileTime.fromMillis(1_000_000L);
        Files.setLastModifiedTime(weights, old);
        assertEquals(dir, DemoModel.ensure(dir, TINY, 1));
        assertEquals(old, Files.getLastModifiedTime(weights));
    }

    @Test
    void concurrentWritersPublishOneCompleteModelAndLeaveNoStaging(@TempDir Path root) throws Exception {
        Path dir = root.resolve("demo");
        int writers = 3;
        CountDownLatch start = new CountDownLatch(1);
        ExecutorService pool = Executors.newFixedThreadPool(writers);
        try {
            List<Future<Path>> results = new ArrayList<>();
            for (int i = 0; i < writers; i++) {
                Callable<Path> writer = () -> {
                    start.await();
                    return DemoModel.ensure(dir, TINY, 5);
                };
                results.add(pool.submit(writer));
            }
            start.countDown();
            for (Future<Path> result : results) {
                assertEquals(dir, result.get());
            }
        } finally {
            pool.shutdownNow();
        }
        assertEquals(TINY, ModelDirectory.open(dir).config());
        try (Stream<Path> entries = Files.list(root)) {
            assertEquals(List.of(dir), entries.toList(), "only the published directory remains");
        }
    }

    @Test
    void aForeignNonEmptyDirectoryIsRefusedNamingTheOverrides(@TempDir Path root) throws Exception {
        Path dir = Files.createDirectories(root.resolve("taken"));
        Files.writeString(dir.resolve("notes.txt"), "mine");
        GraphlaneException e = assertThrows(GraphlaneException.class, () -> DemoModel.ensure(dir, TINY, 1));
        assertTrue(e.getMessage().contains(dir.toString()) && e.getMessage().contains(DemoModel.DIR_PROPERTY)
                && e.getMessage().contains(DemoModel.DIR_ENV), e.getMessage());
        assertEquals("mine", Files.readString(dir.resolve("notes.txt")));
    }

    @Test
    void theDirectoryPropertyOverridesTheDefault(@TempDir Path root) {
        String before = System.getProperty(DemoModel.DIR_PROPERTY);
        try {
            System.setProperty(DemoModel.DIR_PROPERTY, root.resolve("elsewhere").toString());
            assertEquals(root.resolve("elsewhere"), DemoModel.directory());
        } finally {
            if (before == null) {
                System.clearProperty(DemoModel.DIR_PROPERTY);
            } else {
                System.setProperty(DemoModel.DIR_PROPERTY, before);
            }
        }
        if (System.getenv(DemoModel.DIR_ENV) == null) {
            assertTrue(DemoModel.directory().endsWith(Path.of(".cache", "graphlane", "demo-model-v1")));
        }
    }

    @Test
    void theDemoConfigurationGivesEveryStageRealWork() {
        LlamaConfig c = DemoModel.CONFIG;
        long perLayer = (long) c.hiddenSize() * (2L * c.queryWidth() + 2L * c.kvWidth() + 3L * c.intermediateSize());
        assertEquals(256, c.vocabSize(), "byte-level vocabulary");
        assertEquals(0, c.layerCount() % 4, "1, 2 and 4 stages split the layers evenly");
        assertTrue(perLayer * c.layerCount() / 4 > 10_000_000L, "each of 4 stages multiplies over 10M weights per token");
    }

    @Test
    void seededWeightsDependOnlyOnTheSeed() {
        assertArrayEquals(SeededWeights.generate(TINY, 9).get("model.norm.weight"), SeededWeights.generate(TINY, 9).get("model.norm.weight"));
        assertTrue(SeededWeights.generate(TINY, 9).get("model.norm.weight")[0] != SeededWeights.generate(TINY, 10).get("model.norm.weight")[0]);
    }
}
