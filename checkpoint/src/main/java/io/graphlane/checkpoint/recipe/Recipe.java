package io.graphlane.checkpoint.recipe;

import io.graphlane.checkpoint.CheckpointException;
import io.graphlane.checkpoint.CheckpointSource;
import io.graphlane.checkpoint.Selection;
import io.graphlane.core.tensor.DType;
import io.graphlane.core.tensor.Shape;
import io.graphlane.core.tensor.TensorSpec;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;
import java.util.stream.Collectors;

/**
 * One validated step of a derived weight. Every step checks its inputs (shapes, dtypes, axes,
 * permutations, byte counts) when it is built and infers its output {@link #spec()}, so a recipe
 * that exists is one that can be evaluated; nothing is read until {@link DerivedWeight#evaluate}.
 * {@link #slice} pushes a range of the result down to the sources, so a tensor-parallel shard reads
 * only its part of the checkpoint.
 */
public sealed interface Recipe permits Recipe.Source, Recipe.Select, Recipe.Concat, Recipe.Stack,
        Recipe.Reshape, Recipe.Transpose, Recipe.Cast, Recipe.View, Recipe.QuantizeQ8, Recipe.Dequantize, Recipe.RepackQ8,
        Recipe.Offset {

    /** The inferred dtype and shape of this step's result. */
    TensorSpec spec();

    /** The sources this step reads, depth first (the order {@link DerivedWeight#acquireSources} leases them). */
    List<Source> sources();

    /**
     * A recipe whose result is exactly indices [start, end) of {@code axis} of this one's, with the
     * range pushed down to the sources wherever the steps allow it.
     *
     * @throws RecipeException naming the axis and bounds if the range does not fit
     */
    Recipe slice(int axis, long start, long end);

    /** The whole tensor {@code key} of {@code source}. */
    static Source source(CheckpointSource source, String key) {
        return source(source, key, Selection.all());
    }

    /**
     * {@code selection} of tensor {@code key} of {@code source} (used to rename as well: the derived weight carries its own name).
     *
     * @throws RecipeException naming the tensor if it does not exist or the selection does not fit
     */
    static Source source(CheckpointSource source, String key, Selection selection) {
        Objects.requireNonNull(source, "source");
        try {
            return new Source(source, key, selection, source.spec(key, selection));
        } catch (CheckpointException e) {
            throw new RecipeException("recipe step source('" + key + "'" + selection + "): " + e.getMessage());
        }
    }

    /** {@code selection} of this step's result. */
    default Recipe select(Selection selection) {
        return new Select(this, selection, Steps.check(() -> selection.apply(spec().shape()),
                () -> "select" + selection + " of " + this));
    }

    /** Concatenates {@code parts} along {@code axis}: same dtype and rank, equal on every other axis. */
    static Recipe concat(int axis, Recipe... parts) {
        return concat(axis, List.of(parts));
    }

    /** Concatenates {@code parts} along {@code axis}: same dtype and rank, equal on every other axis. */
    static Recipe concat(int axis, List<? extends Recipe> parts) {
        return new Concat(axis, List.copyOf(parts), Steps.concatSpec(axis, parts));
    }

    /** Stacks {@code parts} (all of one spec) along a new axis {@code axis}. */
    static Recipe stack(int axis, List<? extends Recipe> parts) {
        return new Stack(axis, List.copyOf(parts), Steps.stackSpec(axis, parts));
    }

    /** The same elements in row-major order with shape {@code dims} (equal element count). */
    default Recipe reshape(long... dims) {
        Shape shape = Steps.check(() -> Shape.of(dims), () -> "reshape" + Arrays.toString(dims) + " of " + this);
        if (shape.elementCount() != spec().shape().elementCount()) {
            throw new RecipeException("recipe step reshape" + shape + " of " + this + ": " + shape.elementCount()
                    + " elements, expected " + spec().shape().elementCount() + " (shape " + spec().shape() + ")");
        }
        return new Reshape(this, new TensorSpec(spec().dtype(), shape));
    }

    /** Axis {@code i} of the result is axis {@code permutation[i]} of this one. */
    default Recipe transpose(int... permutation) {
        return new Transpose(this, permutation.clone(), Steps.transposeSpec(this, permutation));
    }

    /**
     * These F32 values plus {@code delta}, each sum rounded to F32 (llama.cpp stores Gemma's norm weights as
     * {@code 1 + w}; an offset of −1 gives back the {@code w} a Gemma norm adds 1 to).
     *
     * @throws RecipeException naming the step if the input is not F32 or {@code delta} is not finite
     */
    default Recipe offset(float delta) {
        if (spec().dtype() != DType.F32) {
            throw new RecipeException("recipe step offset(" + delta + ") of " + this + ": input dtype " + spec().dtype()
                    + " is not supported, expected F32");
        }
        if (!Float.isFinite(delta)) {
            throw new RecipeException("recipe step offset(" + delta + ") of " + this + ": the offset must be finite");
        }
        return new Offset(this, delta, spec());
    }

    /** The same values converted to floating-point {@code dtype} (F32, F16, BF16 or F64). */
    default Recipe cast(DType dtype) {
        Objects.requireNonNull(dtype, "dtype");
        if (!dtype.isFloatingPoint()) {
            throw new RecipeException("recipe step cast(" + dtype + ") of " + this + ": target dtype " + dtype
                    + " is not supported, expected one of F32, F16, BF16, F64");
        }
        return new Cast(this, new TensorSpec(dtype, spec().shape()));
    }

    /**
     * This matrix (any floating-point dtype) quantized to 8 bits in blocks of {@value BlockQ8#BLOCK} with one
     * scale each, laid out as {@link BlockQ8} describes.
     *
     * @throws RecipeException naming the step if the input is not a floating-point matrix with a multiple of 32 columns
     */
    default Recipe quantizeQ8() {
        if (!spec().dtype().isFloatingPoint()) {
            throw new RecipeException("recipe step quantizeQ8 of " + this + ": input dtype " + spec().dtype()
                    + " is not supported, expected one of F32, F16, BF16, F64");
        }
        TensorSpec out;
        try {
            out = BlockQ8.quantizedSpec(spec().shape());
        } catch (RecipeException e) {
            throw new RecipeException("recipe step quantizeQ8 of " + this + ": " + e.getMessage());
        }
        return new QuantizeQ8(this, out);
    }

    /**
     * These raw bytes ({@code U8}, the last axis holding whole blocks of {@code format}) decoded to F32:
     * the result has the same leading axes and {@code blocks × format.blockValues()} values on the last.
     *
     * @throws RecipeException naming the step if the input is not U8 or its last axis is not whole blocks
     */
    default Recipe dequantize(BlockFormat format) {
        Objects.requireNonNull(format, "format");
        String step = "recipe step dequantize(" + format.name() + ") of " + this;
        if (spec().dtype() != DType.U8) {
            throw new RecipeException(step + ": input dtype " + spec().dtype() + " is not supported, expected U8 (the "
                    + format.name() + " blocks as raw bytes)");
        }
        Shape in = spec().shape();
        if (in.rank() < 1) {
            throw new RecipeException(step + ": input is a scalar, expected at least one axis of blocks");
        }
        long last = in.dim(in.rank() - 1);
        if (format.blockBytes() < 1 || format.blockValues() < 1 || last % format.blockBytes() != 0) {
            throw new RecipeException(step + ": last axis holds " + last + " bytes, expected a multiple of "
                    + format.blockBytes() + " (one " + format.name() + " block of " + format.blockValues() + " values)");
        }
        long[] dims = in.dims();
        dims[dims.length - 1] = Steps.check(() -> Math.multiplyExact(last / format.blockBytes(), (long) format.blockValues()),
                () -> "dequantize(" + format.name() + ")");
        TensorSpec out = new TensorSpec(DType.F32, Steps.check(() -> Shape.of(dims), () -> "dequantize(" + format.name() + ")"));
        Steps.check(out::byteSize, () -> "dequantize(" + format.name() + ") of " + this);
        return new Dequantize(this, format, out);
    }

    /**
     * These raw bytes ({@code U8 [rows, blocks × 34]}: per block of {@value BlockQ8#BLOCK} values, one little-endian
     * F16 scale then 32 int8 quants, GGUF's {@code Q8_0}) rearranged into {@link BlockQ8}'s layout without
     * re-quantizing: the quants are copied as they are and each scale widened to F32, which is exact, so
     * {@code scale × q} is the value {@code dequantize} decodes.
     *
     * @throws RecipeException naming the step if the input is not a U8 matrix of whole blocks
     */
    default Recipe repackQ8() {
        String step = "recipe step repackQ8 of " + this;
        if (spec().dtype() != DType.U8) {
            throw new RecipeException(step + ": input dtype " + spec().dtype() + " is not supported, expected U8 (Q8_0 blocks as raw bytes)");
        }
        Shape in = spec().shape();
        if (in.rank() != 2 || in.dim(1) % RepackQ8.BLOCK_BYTES != 0) {
            throw new RecipeException(step + ": input shape " + in + ", expected [rows, blocks × " + RepackQ8.BLOCK_BYTES
                    + "] (whole Q8_0 blocks of an F16 scale and " + BlockQ8.BLOCK + " int8 quants)");
        }
        long cols = in.dim(1) / RepackQ8.BLOCK_BYTES * BlockQ8.BLOCK;
        return new RepackQ8(this, BlockQ8.quantizedSpec(Shape.of(in.dim(0), cols)));
    }

    /** The same bytes reinterpreted as {@code dtype} with shape {@code dims} (equal byte count). */
    default Recipe view(DType dtype, long... dims) {
        Shape shape = Steps.check(() -> Shape.of(dims), () -> "view" + Arrays.toString(dims) + " of " + this);
        TensorSpec out = new TensorSpec(dtype, shape);
        long bytes = Steps.check(out::byteSize, () -> "view " + dtype + shape + " of " + this);
        if (bytes != spec().byteSize()) {
            throw new RecipeException("recipe step view(" + out + ") of " + this + ": " + bytes
                    + " bytes, expected the input's " + spec().byteSize() + " bytes (" + spec() + ")");
        }
        return new View(this, out);
    }

    /** Reads {@code selection} of one checkpoint tensor. */
    record Source(CheckpointSource source, String key, Selection selection, TensorSpec spec) implements Recipe {
        @Override
        public List<Source> sources() {
            return List.of(this);
        }

        @Override
        public Recipe slice(int axis, long start, long end) {
            Steps.checkSlice(this, axis, start, end);
            TensorSpec full = source.spec(key, Selection.all());
            if (selection.isWhole(full.shape()) && full.shape().rank() == spec.shape().rank()) {
                return Recipe.source(source, key, Selection.range(axis, start, end));
            }
            if (selection instanceof Selection.Range r && r.axis() == axis) {
                return Recipe.source(source, key, Selection.range(axis, r.start() + start, r.start() + end));
            }
            if (selection instanceof Selection.Indices ix && ix.axis() == axis) {
                return Recipe.source(source, key, Selection.indices(axis,
                        Arrays.copyOfRange(ix.indices(), (int) start, (int) end)));
            }
            if (selection instanceof Selection.Span s) {
                return Recipe.source(source, key, Selection.span(s.start() + start, s.start() + end));
            }
            return select(Selection.range(axis, start, end));
        }

        @Override
        public String toString() {
            return "source('" + key + "'" + selection + ")";
        }
    }

    /** A selection of its input's result (used where a slice cannot be pushed further down). */
    record Select(Recipe input, Selection selection, Shape shape) implements Recipe {
        @Override
        public TensorSpec spec() {
            return new TensorSpec(input.spec().dtype(), shape);
        }

        @Override
        public List<Source> sources() {
            return input.sources();
        }

        @Override
        public Recipe slice(int axis, long start, long end) {
            Steps.checkSlice(this, axis, start, end);
            if (selection instanceof Selection.Range r && r.axis() == axis) {
                return input.slice(axis, r.start() + start, r.start() + end);
            }
            return select(Selection.range(axis, start, end));
        }

        @Override
        public String toString() {
            return "select" + selection + "(" + input + ")";
        }
    }

    /** Parts joined along one existing axis. */
    record Concat(int axis, List<Recipe> parts, TensorSpec spec) implements Recipe {
        @Override
        public List<Source> sources() {
            return Steps.sourcesOf(parts);
        }

        @Override
        public Recipe slice(int sliceAxis, long start, long end) {
            Steps.checkSlice(this, sliceAxis, start, end);
            if (sliceAxis != axis) {
                List<Recipe> sliced = new ArrayList<>();
                for (Recipe p : parts) {
                    sliced.add(p.slice(sliceAxis, start, end));
                }
                return Recipe.concat(axis, sliced);
            }
            if (start == end) {
                return select(Selection.range(axis, start, end));
            }
            List<Recipe> kept = new ArrayList<>();
            long offset = 0;
            for (Recipe p : parts) {
                long len = p.spec().shape().dim(axis);
                long from = Math.max(start, offset);
                long to = Math.min(end, offset + len);
                if (from < to) {
                    kept.add(p.slice(axis, from - offset, to - offset));
                }
                offset += len;
            }
            return kept.size() == 1 ? kept.get(0) : Recipe.concat(axis, kept);
        }

        @Override
        public String toString() {
            return "concat(axis " + axis + ", " + parts.stream().map(Object::toString).collect(Collectors.joining(", ")) + ")";
        }
    }

    /** Parts of one spec stacked along a new axis. */
    record Stack(int axis, List<Recipe> parts, TensorSpec spec) implements Recipe {
        @Override
        public List<Source> sources() {
            return Steps.sourcesOf(parts);
        }

        @Override
        public Recipe slice(int sliceAxis, long start, long end) {
            Steps.checkSlice(this, sliceAxis, start, end);
            if (sliceAxis == axis) {
                if (start == end) {
                    return select(Selection.range(axis, start, end));
                }
                return Recipe.stack(axis, parts.subList((int) start, (int) end));
            }
            int partAxis = sliceAxis < axis ? sliceAxis : sliceAxis - 1;
            List<Recipe> sliced = new ArrayList<>();
            for (Recipe p : parts) {
                sliced.add(p.slice(partAxis, start, end));
            }
            return Recipe.stack(axis, sliced);
        }

        @Override
        public String toString() {
            return "stack(axis " + axis + ", " + parts.stream().map(Object::toString).collect(Collectors.joining(", ")) + ")";
        }
    }

    /** The input's elements with another shape. */
    record Reshape(Recipe input, TensorSpec spec) implements Recipe {
        @Override
        public List<Source> sources() {
            return input.sources();
        }

        @Override
        public Recipe slice(int axis, long start, long end) {
            Steps.checkSlice(this, axis, start, end);
            if (Steps.samePrefix(input.spec().shape(), spec.shape(), axis)) {
                long[] dims = spec.shape().dims();
                dims[axis] = end - start;
                return input.slice(axis, start, end).reshape(dims);
            }
            return select(Selection.range(axis, start, end));
        }

        @Override
        public String toString() {
            return "reshape" + spec.shape() + "(" + input + ")";
        }
    }

    /** The input with its axes permuted. */
    record Transpose(Recipe input, int[] permutation, TensorSpec spec) implements Recipe {
        /** Copies the permutation so the step is immutable. */
        public Transpose {
            permutation = permutation.clone();
        }

        @Override
        public int[] permutation() {
            return permutation.clone();
        }

        @Override
        public List<Source> sources() {
            return input.sources();
        }

        @Override
        public Recipe slice(int axis, long start, long end) {
            Steps.checkSlice(this, axis, start, end);
            return input.slice(permutation[axis], start, end).transpose(permutation);
        }

        @Override
        public boolean equals(Object o) {
            return o instanceof Transpose t && t.input.equals(input) && Arrays.equals(t.permutation, permutation);
        }

        @Override
        public int hashCode() {
            return input.hashCode() * 31 + Arrays.hashCode(permutation);
        }

        @Override
        public String toString() {
            return "transpose" + Arrays.toString(permutation) + "(" + input + ")";
        }
    }

    /** The input's values converted to another floating-point dtype. */
    /** The input's F32 values plus a constant; every range pushes down. */
    record Offset(Recipe input, float delta, TensorSpec spec) implements Recipe {
        @Override
        public List<Source> sources() {
            return input.sources();
        }

        @Override
        public Recipe slice(int axis, long start, long end) {
            Steps.checkSlice(this, axis, start, end);
            return input.slice(axis, start, end).offset(delta);
        }

        @Override
        public String toString() {
            return "offset(" + delta + ", " + input + ")";
        }
    }

    record Cast(Recipe input, TensorSpec spec) implements Recipe {
        @Override
        public List<Source> sources() {
            return input.sources();
        }

        @Override
        public Recipe slice(int axis, long start, long end) {
            Steps.checkSlice(this, axis, start, end);
            return input.slice(axis, start, end).cast(spec.dtype());
        }

        @Override
        public String toString() {
            return "cast(" + spec.dtype() + ", " + input + ")";
        }
    }

    /** The input's bytes reinterpreted as another dtype and shape. */
    record View(Recipe input, TensorSpec spec) implements Recipe {
        @Override
        public List<Source> sources() {
            return input.sources();
        }

        @Override
        public Recipe slice(int axis, long start, long end) {
            Steps.checkSlice(this, axis, start, end);
            if (input.spec().dtype().byteSize() == spec.dtype().byteSize()
                    && Steps.samePrefix(input.spec().shape(), spec.shape(), axis)) {
                long[] dims = spec.shape().dims();
                dims[axis] = end - start;
                return input.slice(axis, start, end).view(spec.dtype(), dims);
            }
            return select(Selection.range(axis, start, end));
        }

        @Override
        public String toString() {
            return "view(" + spec + ", " + input + ")";
        }
    }

    /** The input matrix quantized to 8 bits in blocks of 32 ({@link BlockQ8}); row ranges push down, column ranges are refused. */
    record QuantizeQ8(Recipe input, TensorSpec spec) implements Recipe {
        @Override
        public List<Source> sources() {
            return input.sources();
        }

        @Override
        public Recipe slice(int axis, long start, long end) {
            Steps.checkSlice(this, axis, start, end);
            if (axis != 0) {
                throw new RecipeException("recipe step " + this + ": a quantized matrix is sliced by rows (axis 0) only, found axis " + axis);
            }
            return input.slice(axis, start, end).quantizeQ8();
        }

        @Override
        public String toString() {
            return "quantizeQ8(" + input + ")";
        }
    }
    /**
     * The input's raw blocks decoded to F32. A range of a leading axis, or of the last axis on block
     * boundaries, pushes down to the raw bytes; any other range of the last axis decodes the blocks that
     * cover it and selects from them.
     */
    record Dequantize(Recipe input, BlockFormat format, TensorSpec spec) implements Recipe {
        @Override
        public List<Source> sources() {
            return input.sources();
        }

        @Override
        public Recipe slice(int axis, long start, long end) {
            Steps.checkSlice(this, axis, start, end);
            int last = spec.shape().rank() - 1;
            if (axis != last) {
                return input.slice(axis, start, end).dequantize(format);
            }
            if (end == start) {
                return input.slice(axis, 0, 0).dequantize(format);
            }
            long per = format.blockValues();
            long firstBlock = start / per;
            long endBlock = (end + per - 1) / per;
            Recipe covering = input.slice(axis, firstBlock * format.blockBytes(), endBlock * format.blockBytes())
                    .dequantize(format);
            if (start == firstBlock * per && end == endBlock * per) {
                return covering;
            }
            return covering.select(Selection.range(axis, start - firstBlock * per, end - firstBlock * per));
        }

        @Override
        public String toString() {
            return "dequantize(" + format.name() + ", " + input + ")";
        }
    }

    /** Q8_0 blocks rearranged into {@link BlockQ8}'s layout, quants as they are, scales widened; row ranges push down, column ranges are refused. */
    record RepackQ8(Recipe input, TensorSpec spec) implements Recipe {
        /** Bytes of one input block: an F16 scale and {@value BlockQ8#BLOCK} int8 quants. */
        public static final int BLOCK_BYTES = 2 + BlockQ8.BLOCK;

        @Override
        public List<Source> sources() {
            return input.sources();
        }

        @Override
        public Recipe slice(int axis, long start, long end) {
            Steps.checkSlice(this, axis, start, end);
            if (axis != 0) {
                throw new RecipeException("recipe step " + this + ": a quantized matrix is sliced by rows (axis 0) only, found axis " + axis);
            }
            return input.slice(axis, start, end).repackQ8();
        }

        @Override
        public String toString() {
            return "repackQ8(" + input + ")";
        }
    }
}
