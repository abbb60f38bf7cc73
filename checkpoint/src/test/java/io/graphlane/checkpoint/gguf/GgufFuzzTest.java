package io.graphlane.checkpoint.gguf;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.graphlane.checkpoint.CheckpointException;
import io.graphlane.checkpoint.CheckpointSource;
import io.graphlane.checkpoint.recipe.DerivedWeight;
import io.graphlane.core.param.EncodedLease;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.Random;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Mutation fuzzing of GGUF files: every truncation and every single-bit flip of the header of a small
 * valid file, and seeded random multi-byte mutations of it, each end in a valid read (whose every
 * tensor then leases and whose every Hugging Face weight derives) or a one-line
 * {@link CheckpointException}; never another exception, an OutOfMemoryError, or a hang.
 */
class GgufFuzzTest {
    @TempDir
    static Path tmp;

    private static byte[] seed;
    private static int headerEnd;

    @BeforeAll
    static void setUp() {
        float[] q = new float[2 * 32];
        for (int i = 0; i < q.length; i++) {
            q[i] = (float) Math.cos(i);
        }
        seed = new GgufWriter()
                .put("general.architecture", "llama")
                .putU32("llama.attention.head_count", 1)
                .putStrings("tokenizer.ggml.tokens", "a", "b")
                .putFloats("tokenizer.ggml.scores", 0f, -1f)
                .alignment(16)
                .add("token_embd.weight", GgmlType.F32, new long[] {2, 2}, new float[] {1, 2, 3, 4})
                .add("blk.0.attn_q.weight", GgmlType.Q8_0, new long[] {2, 32}, q)
                .add("output_norm.weight", GgmlType.BF16, new long[] {3}, new float[] {1, -1, 0.5f})
                .toBytes();
        GgufFile f = GgufFile.parse(Path.of("seed.gguf"), seed.length, ByteBuffer.wrap(seed));
        headerEnd = (int) f.dataStart();
        assertEquals(3, f.tensors().size());
    }

    /** Reads {@code bytes} as a file: a valid read must lease every tensor and derive every weight. */
    private static boolean tryRead(byte[] bytes, String what) {
        Path p = tmp.resolve("fuzz.gguf");
        try {
            Files.write(p, bytes);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return assertTimeoutPreemptively(Duration.ofSeconds(10), () -> {
            try {
                GgufCheckpoint c = GgufCheckpoint.open(p);
                try (CheckpointSource src = c.openSource()) {
                    for (String name : c.tensorNames()) {
                        EncodedLease lease = src.lease(name);
                        try {
                            ByteBuffer b = lease.bytes();
                            assertEquals(lease.spec().byteSize(), b.remaining(), what + ": " + name);
                        } finally {
                            lease.release();
                        }
                    }
                    for (DerivedWeight w : c.weights(src).values()) {
                        w.evaluateToBuffer();
                    }
                }
                return true;
            } catch (CheckpointException e) {
                assertFalse(e.getMessage().contains("\n"), what + ": one line: " + e.getMessage());
                assertTrue(e.getMessage().startsWith(p.toString()) || e.getMessage().contains(p.toString()),
                        what + ": names the file: " + e.getMessage());
                return false;
            }
        }, what);
    }

    @Test
    void theSeedReads() {
        assertTrue(tryRead(seed, "seed"));
    }

    @Test
    void everyTruncationIsRefusedOrReads() {
        int read = 0;
        for (int n = 0; n < seed.length; n++) {
            if (tryRead(Arrays.copyOf(seed, n), "truncated to " + n)) {
                read++;
            }
        }
        // only a cut inside the last tensor's padding leaves a valid file
        assertTrue(read <= 16, read + " truncations read");
    }

    @Test
    void everyHeaderBitFlipIsRefusedOrReads() {
        for (int i = 0; i < headerEnd; i++) {
            for (int bit = 0; bit < 8; bit++) {
                byte[] copy = seed.clone();
                copy[i] ^= (byte) (1 << bit);
                tryRead(copy, "bit " + bit + " of byte " + i + " flipped");
            }
        }
    }

    @Test
    void randomMutationsAreRefusedOrRead() {
        Random random = new Random(20261206L);
        for (int round = 0; round < 1500; round++) {
            byte[] copy = seed.clone();
            int changes = 1 + random.nextInt(6);
            for (int c = 0; c < changes; c++) {
                int at = random.nextInt(headerEnd);
                switch (random.nextInt(3)) {
                    case 0 -> copy[at] = (byte) random.nextInt(256);
                    case 1 -> copy[at] = (byte) 0xFF;
                    default -> copy[at] = 0;
                }
            }
            tryRead(copy, "mutation round " + round);
        }
    }
}
