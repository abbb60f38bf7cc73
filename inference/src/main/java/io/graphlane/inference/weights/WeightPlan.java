package io.graphlane.inference.weights;

import io.graphlane.backend.cpu.nn.PackedMatrix;
import io.graphlane.checkpoint.CheckpointSource;
import io.graphlane.checkpoint.gguf.GgmlType;
import io.graphlane.checkpoint.recipe.BlockQ8;
import io.graphlane.checkpoint.recipe.DerivedWeight;
import io.graphlane.checkpoint.recipe.Recipe;
import io.graphlane.core.GraphlaneException;
import io.graphlane.core.tensor.DType;
import io.graphlane.core.tensor.Shape;
import io.graphlane.core.tensor.TensorSpec;
import io.graphlane.inference.llama.LlamaConfig;
import io.graphlane.inference.llama.LlamaTensors;
import io.graphlane.inference.llama.LlamaTensors.Expected;
import io.graphlane.inference.stage.StagePlan;
import io.graphlane.inference.stage.StageSpec;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicBoolean;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What one expected tensor becomes under a {@link WeightFormat}: the dtype and shape it is realized in,
 * and, when that differs from the checkpoint's bytes, the derived-weight recipe (a cast, or an 8-bit
 * quantization) that the materialization supervisor evaluates in place of a plain lease.
 *
 * @param realized the spec of the realized weight (what its parameter slot accepts)
 * @param recipe   the recipe deriving it, or empty when the checkpoint's bytes are used as they are
 */
public record WeightPlan(TensorSpec realized, Optional<DerivedWeight> recipe) {

    /**
     * The JVM system property that, set to {@code true}, holds a GGUF file's Q4_K layer matrices under
     * {@link WeightFormat#STORED} as their blocks, read in place by the CPU's K-quant kernel, instead of decoding them
     * into BF16 at load. Off by default: on this project's CPU measurements the in-place kernel decodes slower than the
     * BF16 kernel reads (docs/gguf.md).
     */
    public static final String Q4K_IN_PLACE_PROPERTY = "graphlane.gguf.q4k-in-place";

    private static final Logger LOG = LoggerFactory.getLogger(WeightPlan.class);
    private static final AtomicBoolean WIDENING_NOTED = new AtomicBoolean();

    /** The layer matrices {@link WeightFormat#Q8} quantizes, by the end of their names. */
    private static final List<String> QUANTIZED = List.of("self_attn.q_proj.weight", "self_attn.k_proj.weight",
            "self_attn.v_proj.weight", "self_attn.o_proj.weight", "mlp.gate_proj.weight", "mlp.up_proj.weight",
            "mlp.down_proj.weight");

    public WeightPlan {
        Objects.requireNonNull(realized, "realized");
        Objects.requireNonNull(recipe, "recipe");
    }

    /**
     * The plan of {@code tensor} of {@code source} in {@code format}; {@code narrow} says whether the backend's
     * slots hold weights other than F32 ({@link WeightSlots#holdsNarrowWeights}).
     *
     * @throws GraphlaneException naming the option when {@code format} needs narrow weights the backend cannot hold
     */
    public static WeightPlan of(CheckpointSource source, Expected tensor, WeightFormat format, boolean narrow) {
        return of(source, tensor, format, narrow, false);
    }

    /**
     * As {@link #of(CheckpointSource, Expected, WeightFormat, boolean)}, where {@code sixteenBitOnly} says the backend's
     * slots hold F16 and BF16 matrices but no 8-bit blocks, and keep a 16-bit matrix as stored whatever the host's SIMD
     * ({@link WeightSlots#holdsSixteenBitOnly}, a GPU): there {@link WeightFormat#STORED} keeps F16/BF16 matrices and
     * reads GGUF blocks into BF16, and {@link WeightFormat#Q8} is refused.
     *
     * @throws GraphlaneException naming the option when {@code format} needs weights the backend cannot hold
     */
    public static WeightPlan of(CheckpointSource source, Expected tensor, WeightFormat format, boolean narrow, boolean sixteenBitOnly) {
        Shape shape = Shape.of(tensor.checkpointShape());
        requireHoldable(format, narrow, sixteenBitOnly);
        // rows of a fused tensor, or a weight the source derives (a GGUF file's): always a recipe, never a plain lease
        boolean derived = tensor.isFused() || source.isDerived(tensor.sourceName());
        if (!narrow) {
            if (derived) {
                Recipe rows = LlamaTensors.recipe(source, tensor);
                Recipe f32 = rows.spec().dtype() == DType.F32 ? rows : rows.cast(DType.F32);
                return new WeightPlan(new TensorSpec(DType.F32, shape), Optional.of(DerivedWeight.of(tensor.name(), f32)));
            }
            return new WeightPlan(new TensorSpec(DType.F32, shape), Optional.empty()); // the backend widens as it realizes
        }
        Recipe base = LlamaTensors.recipe(source, tensor);
        DType stored = base.spec().dtype();
        Optional<GgmlType> blocks = blockType(base);
        if (!sixteenBitOnly && isQuantized(tensor) && tensor.cols() % BlockQ8.BLOCK == 0) {
            if (blocks.orElse(null) == GgmlType.Q8_0 && (format == WeightFormat.Q8 || format == WeightFormat.STORED)) {
                // Q8_0 blocks are the q8 kernel's quants with an F16 scale: rearranged as they are, nothing re-quantized
                Recipe q = ((Recipe.Dequantize) base).input().repackQ8();
                return new WeightPlan(BlockQ8.quantizedSpec(shape), Optional.of(DerivedWeight.of(tensor.name(), q)));
            }
            if (blocks.orElse(null) == GgmlType.Q4_K && format == WeightFormat.STORED && Boolean.getBoolean(Q4K_IN_PLACE_PROPERTY)
                    && tensor.cols() % GgmlType.Q4_K.blockValues() == 0) {
                // Q4_K blocks held as they are and read in place by the CPU's K-quant kernel (opt-in: measured slower)
                Recipe raw = ((Recipe.Dequantize) base).input();
                return new WeightPlan(raw.spec(), Optional.of(DerivedWeight.of(tensor.name(), raw)));
            }
            if (format == WeightFormat.Q8) {
                // the slot expects the quantized form of the expected shape, so a wrong-shaped source fails the bind, naming both
                Recipe q = base.quantizeQ8();
                return new WeightPlan(BlockQ8.quantizedSpec(shape), Optional.of(DerivedWeight.of(tensor.name(), q)));
            }
        }
        DType target = tensor.vector() ? DType.F32 : switch (format) {
            case F32 -> DType.F32;
            case BF16 -> DType.BF16;
            // blocks of 4 to 8 bits (decoded to F32 by the recipe) are held in 16 bits unless asked otherwise
            case STORED -> blocks.isPresent() ? (sixteenBitOnly ? DType.BF16 : storedNarrow(DType.BF16))
                    : stored == DType.BF16 || stored == DType.F16 ? (sixteenBitOnly ? stored : storedNarrow(stored)) : DType.F32;
            // the matrices q8 leaves unquantized (the embedding and the head: a fifth to a third of a real model's bytes)
            // are held in 16 bits, never wider: an F32 head read in full each step would cost as much as the 8-bit layers
            case Q8 -> blocks.isPresent() ? (sixteenBitOnly ? DType.BF16 : storedNarrow(DType.BF16))
                    : stored == DType.BF16 || stored == DType.F16 ? (sixteenBitOnly ? stored : storedNarrow(stored))
                    : isEmbeddingOrHead(tensor) ? (sixteenBitOnly ? DType.BF16 : storedNarrow(DType.BF16)) : DType.F32;
        };
        if (target == stored) {
            return new WeightPlan(new TensorSpec(target, shape), derived
                    ? Optional.of(DerivedWeight.of(tensor.name(), base)) : Optional.empty());
        }
        Recipe cast = base.cast(target);
        return new WeightPlan(new TensorSpec(target, shape), Optional.of(DerivedWeight.of(tensor.name(), cast)));
    }

    /** The GGUF block type a recipe decodes at its root ({@code dequantize}), if it does. */
    static Optional<GgmlType> blockType(Recipe recipe) {
        return recipe instanceof Recipe.Dequantize d && d.format() instanceof GgmlType g ? Optional.of(g) : Optional.empty();
    }

    /**
     * What a 16-bit matrix is held in when the format keeps the checkpoint's dtype: itself where the SIMD kernels run,
     * else F32, since the scalar 16-bit kernel is slower than OpenBLAS over F32 (about 0.6x on the demo model), and a
     * default must not make decoding slower; {@code --weights bf16} keeps 16 bits regardless.
     */
    private static DType storedNarrow(DType stored) {
        return storedNarrow(stored, PackedMatrix.simdKernels());
    }

    /** {@link #storedNarrow(DType)} when the SIMD kernels run ({@code simd}) or not. */
    static DType storedNarrow(DType stored, boolean simd) {
        if (simd) {
            return stored;
        }
        if (WIDENING_NOTED.compareAndSet(false, true)) {
            LOG.info("{} matrices are widened to F32: the 16-bit kernels need the JVM option --add-modules jdk.incubator.vector "
                    + "(for example JDK_JAVA_OPTIONS=--add-modules=jdk.incubator.vector); with it they stay 16-bit, half the memory", stored);
        }
        return DType.F32;
    }

    /**
     * Refuses {@code format} on a backend whose slots hold F32 only ({@code narrow} false) unless it is
     * {@link WeightFormat#STORED} or {@link WeightFormat#F32}.
     *
     * @throws GraphlaneException naming the option and what to use instead
     */
    public static void requireHoldable(WeightFormat format, boolean narrow) {
        requireHoldable(format, narrow, false);
    }

    /**
     * As {@link #requireHoldable(WeightFormat, boolean)}; a backend whose slots hold 16-bit but no 8-bit weights
     * ({@code sixteenBitOnly}) refuses {@link WeightFormat#Q8}.
     *
     * @throws GraphlaneException naming the option and what to use instead
     */
    public static void requireHoldable(WeightFormat format, boolean narrow, boolean sixteenBitOnly) {
        if (sixteenBitOnly && format == WeightFormat.Q8) {
            throw new GraphlaneException("--weights q8 is not supported on this backend: it holds F32, BF16 or F16 weights; use"
                    + " --weights stored, bf16 or f32, or --backend cpu");
        }
        if (!narrow && format != WeightFormat.STORED && format != WeightFormat.F32) {
            throw new GraphlaneException("--weights " + format.optionValue() + " is not supported on this backend: it holds F32 "
                    + "weights only; use --weights f32 (or stored) or --backend cpu");
        }
    }

    /**
     * The weight bytes one decode step of one request reads from the whole model held in {@code format} on a backend
     * that holds narrow weights: every planned tensor once, except the embedding, of which a step reads one row (a
     * tied embedding is also read whole, as the head).
     */
    public static long decodeBytesPerToken(CheckpointSource source, LlamaConfig config, WeightFormat format) {
        return decodeBytesPerToken(source, config, format, false);
    }

    /**
     * As {@link #decodeBytesPerToken(CheckpointSource, LlamaConfig, WeightFormat)}, on a backend that holds 16-bit but
     * no 8-bit weights when {@code sixteenBitOnly} (a GPU: what its {@code limit_ratio} divides by).
     */
    public static long decodeBytesPerToken(CheckpointSource source, LlamaConfig config, WeightFormat format, boolean sixteenBitOnly) {
        StageSpec whole = StagePlan.balanced(config.layerCount(), 1).stages().get(0);
        long bytes = 0;
        for (Expected e : LlamaTensors.forStage(config, whole)) {
            long size = of(source, e, format, true, sixteenBitOnly).realized().byteSize();
            boolean embedding = e.name().equals(LlamaTensors.EMBEDDING);
            bytes += embedding ? size / e.rows() + (config.tieWordEmbeddings() ? size : 0) : size;
        }
        return bytes;
    }

    /** The bytes the whole model's weights take held in {@code format} on a backend that holds narrow weights. */
    public static long heldBytes(CheckpointSource source, LlamaConfig config, WeightFormat format) {
        StageSpec whole = StagePlan.balanced(config.layerCount(), 1).stages().get(0);
        long bytes = 0;
        for (Expected e : LlamaTensors.forStage(config, whole)) {
            bytes += of(source, e, format, true).realized().byteSize();
        }
        return bytes;
    }

    /** True for the embedding and the head (which a tied model reads from the embedding). */
    static boolean isEmbeddingOrHead(Expected tensor) {
        return tensor.name().equals(LlamaTensors.EMBEDDING) || tensor.name().equals(LlamaTensors.LM_HEAD);
    }

    /** True for the layer matrices {@link WeightFormat#Q8} quantizes. */
    static boolean isQuantized(Expected tensor) {
        return !tensor.vector() && QUANTIZED.stream().anyMatch(suffix -> tensor.name().endsWith("." + suffix));
    }
}
