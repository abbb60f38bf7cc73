package io.graphlane.checkpoint.safetensors;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;

import io.graphlane.checkpoint.CheckpointException;
import io.graphlane.checkpoint.CheckpointSource;
import io.graphlane.checkpoint.Fixtures;
import io.graphlane.checkpoint.Selection;
import io.graphlane.checkpoint.TensorLocation;
import io.graphlane.core.param.EncodedLease;
import io.graphlane.core.tensor.DType;
import io.graphlane.core.tensor.TensorSpec;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Comparator;
import java.util.List;
import java.util.stream.Stream;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.lifecycle.AfterContainer;
import net.jqwik.api.lifecycle.BeforeContainer;

/**
 * Seeded mutation fuzzing of safetensors headers: every truncation and every single-bit flip of a
 * small valid file, and random multi-byte mutations of the fixture's header, each end in a valid
 * load (whose every tensor then reads) or a {@link CheckpointException}; never another exception,
 * an OutOfMemoryError, or a hang.
 */
class HeaderFuzzTest {
    private static Path workDir;
    private static byte[] small;
    private static byte[] fixture;
    private static long fixtureHeaderEnd;

    @BeforeContainer
    static void setUp() throws IOException {
        workDir = Files.createTempDirectory("graphlane-fuzz");
        Path dir = Files.createDirectories(workDir.resolve("seed"));
        ByteBuffer bf16 = ByteBuffer.allocate(6).order(ByteOrder.LITTLE_ENDIAN).putShort(0, (short) 0x3F80);
        new SafetensorsWriter()
                .metadata("format", "pt")
                .addF32("w", new long[] {2, 3}, new float[] {1, 2, 3, 4, 5, 6})
                .add("b", TensorSpec.of(DType.BF16, 3), bf16)
                .add("i", TensorSpec.of(DType.I64, 1), ByteBuffer.allocate(8))
                .write(dir.resolve("model.safetensors"));
        small = Files.readAllBytes(dir.resolve("model.safetensors"));
        fixture = Files.readAllBytes(Fixtures.tinyLlama("").resolve("model.safetensors"));
        fixtureHeaderEnd = 8 + ByteBuffer.wrap(fixture).order(ByteOrder.LITTLE_ENDIAN).getLong(0);
    }

    @AfterContainer
    static void tearDown() throws IOException {
        try (Stream<Path> files = Files.walk(workDir)) {
            files.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        }
    }

    /** Loads {@code content} as a model's weights; returns true if it loaded (and every tensor read), false if refused. */
    private static boolean loadOrRefuse(byte[] content) {
        try {
            Path dir = workDir.resolve("case");
            Files.createDirectories(dir);
            Files.write(dir.resolve("model.safetensors"), content);
            try (CheckpointSource source = CheckpointSource.open(dir)) {
                for (TensorLocation t : source.catalog().tensors().values()) {
                    readAll(source.lease(t.name()));
                    if (t.spec().shape().rank() > 0 && t.spec().shape().dim(0) > 1) {
                        readAll(source.lease(t.name(), Selection.range(0, 1, t.spec().shape().dim(0))));
                    }
                }
                assertEquals(0, source.openLeaseCount());
                return true;
            } catch (CheckpointException refused) {
                return false;
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** Runs {@code cases}, failing if together they take longer than a generous bound (a hang). */
    private static void bounded(Runnable cases) {
        assertTimeoutPreemptively(Duration.ofSeconds(60), cases::run);
    }

    private static void readAll(EncodedLease lease) {
        ByteBuffer b = lease.bytes();
        long sum = 0;
        while (b.hasRemaining()) {
            sum += b.get();
        }
        lease.release();
        if (sum == Long.MIN_VALUE) {
            throw new IllegalStateException("unreachable");
        }
    }

    @Property(tries = 1)
    void everyTruncationOfAValidFileIsRefusedAndTheWholeFileLoads() {
        bounded(this::truncations);
    }

    private void truncations() {
        for (int len = 0; len < small.length; len++) {
            byte[] cut = new byte[len];
            System.arraycopy(small, 0, cut, 0, len);
            if (loadOrRefuse(cut)) {
                throw new AssertionError("a file truncated to " + len + " of " + small.length + " bytes loaded");
            }
        }
        if (!loadOrRefuse(small)) {
            throw new AssertionError("the untruncated file was refused");
        }
    }

    @Property(tries = 1)
    void everySingleBitFlipOfTheHeaderIsRefusedOrLoads() {
        bounded(this::bitFlips);
    }

    private void bitFlips() {
        long headerEnd = 8 + ByteBuffer.wrap(small).order(ByteOrder.LITTLE_ENDIAN).getLong(0);
        for (int i = 0; i < headerEnd; i++) {
            for (int bit = 0; bit < 8; bit++) {
                byte[] flipped = small.clone();
                flipped[i] ^= (byte) (1 << bit);
                loadOrRefuse(flipped);
            }
        }
    }

    /** Byte positions in (mostly) the fixture's header, with replacement values. */
    @Provide
    Arbitrary<List<int[]>> mutations() {
        Arbitrary<Integer> position = Arbitraries.frequencyOf(
                net.jqwik.api.Tuple.of(1, Arbitraries.integers().between(0, 7)),
                net.jqwik.api.Tuple.of(20, Arbitraries.integers().between(8, (int) fixtureHeaderEnd - 1)));
        Arbitrary<Integer> value = Arbitraries.oneOf(
                Arbitraries.integers().between(0, 255),
                Arbitraries.of((int) '{', (int) '}', (int) '[', (int) ']', (int) '"', (int) ',', (int) ':', (int) '-',
                        (int) '9', (int) '0', (int) 'e', (int) '\\', 0xC3, 0xFF));
        return Combinators.combine(position, value).as((p, v) -> new int[] {p, v}).list().ofMinSize(1).ofMaxSize(6);
    }

    @Property(tries = 150, seed = "20240611")
    void randomMutationsOfTheFixtureHeaderAreRefusedOrLoad(@ForAll("mutations") List<int[]> edits,
                                                           @ForAll boolean truncate,
                                                           @ForAll("cut") int cut) {
        byte[] mutated = fixture.clone();
        for (int[] e : edits) {
            mutated[e[0]] = (byte) e[1];
        }
        if (truncate) {
            byte[] shorter = new byte[Math.min(cut, mutated.length)];
            System.arraycopy(mutated, 0, shorter, 0, shorter.length);
            mutated = shorter;
        }
        byte[] content = mutated;
        assertTimeoutPreemptively(Duration.ofSeconds(10), () -> loadOrRefuse(content));
    }

    @Provide
    Arbitrary<Integer> cut() {
        return Arbitraries.integers().between(0, (int) fixtureHeaderEnd + 64);
    }
}
