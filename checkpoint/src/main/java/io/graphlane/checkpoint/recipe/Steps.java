package io.graphlane.checkpoint.recipe;

import io.graphlane.core.tensor.Shape;
import io.graphlane.core.tensor.TensorSpec;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.function.Supplier;

/** Shape and dtype inference for recipe steps; every refusal names the step and the expected and found values. */
final class Steps {
    private Steps() {
    }

    /** Runs a shape computation, turning an IllegalArgumentException into a RecipeException naming the step. */
    static <T> T check(Supplier<T> computation, Supplier<String> step) {
        try {
            return computation.get();
        } catch (IllegalArgumentException e) {
            throw new RecipeException("recipe step " + step.get() + ": " + e.getMessage());
        }
    }

    static TensorSpec concatSpec(int axis, List<? extends Recipe> parts) {
        if (parts.isEmpty()) {
            throw new RecipeException("recipe step concat(axis " + axis + "): no parts, expected at least one");
        }
        TensorSpec first = parts.get(0).spec();
        int rank = first.shape().rank();
        if (axis < 0 || axis >= rank) {
            throw new RecipeException("recipe step concat(axis " + axis + "): axis does not exist in part 0 "
                    + parts.get(0) + " of shape " + first.shape() + " (rank " + rank + ")");
        }
        long total = 0;
        for (int i = 0; i < parts.size(); i++) {
            TensorSpec p = parts.get(i).spec();
            if (p.dtype() != first.dtype()) {
                throw new RecipeException("recipe step concat(axis " + axis + "): part " + i + " " + parts.get(i)
                        + " has dtype " + p.dtype() + ", expected " + first.dtype() + " like part 0");
            }
            if (p.shape().rank() != rank) {
                throw new RecipeException("recipe step concat(axis " + axis + "): part " + i + " " + parts.get(i)
                        + " has shape " + p.shape() + ", expected rank " + rank + " like part 0 " + first.shape());
            }
            for (int d = 0; d < rank; d++) {
                if (d != axis && p.shape().dim(d) != first.shape().dim(d)) {
                    throw new RecipeException("recipe step concat(axis " + axis + "): part " + i + " " + parts.get(i)
                            + " has shape " + p.shape() + ", expected dimension " + d + " to be "
                            + first.shape().dim(d) + " like part 0 " + first.shape());
                }
            }
            total = Math.addExact(total, p.shape().dim(axis));
        }
        long[] dims = first.shape().dims();
        dims[axis] = total;
        return new TensorSpec(first.dtype(), Shape.of(dims));
    }

    static TensorSpec stackSpec(int axis, List<? extends Recipe> parts) {
        if (parts.isEmpty()) {
            throw new RecipeException("recipe step stack(axis " + axis + "): no parts, expected at least one");
        }
        TensorSpec first = parts.get(0).spec();
        int rank = first.shape().rank();
        if (axis < 0 || axis > rank) {
            throw new RecipeException("recipe step stack(axis " + axis + "): new axis must be in [0, " + rank
                    + "] for parts of shape " + first.shape());
        }
        for (int i = 1; i < parts.size(); i++) {
            if (!parts.get(i).spec().equals(first)) {
                throw new RecipeException("recipe step stack(axis " + axis + "): part " + i + " " + parts.get(i)
                        + " is " + parts.get(i).spec() + ", expected " + first + " like part 0");
            }
        }
        long[] dims = new long[rank + 1];
        long[] in = first.shape().dims();
        for (int d = 0, j = 0; d <= rank; d++) {
            dims[d] = d == axis ? parts.size() : in[j++];
        }
        return new TensorSpec(first.dtype(), Shape.of(dims));
    }

    static TensorSpec transposeSpec(Recipe input, int[] permutation) {
        Shape shape = input.spec().shape();
        int rank = shape.rank();
        String step = "transpose" + Arrays.toString(permutation) + " of " + input;
        if (permutation.length != rank) {
            throw new RecipeException("recipe step " + step + ": permutation has " + permutation.length
                    + " axes, expected " + rank + " for shape " + shape);
        }
        boolean[] seen = new boolean[rank];
        long[] dims = new long[rank];
        for (int i = 0; i < rank; i++) {
            int p = permutation[i];
            if (p < 0 || p >= rank || seen[p]) {
                throw new RecipeException("recipe step " + step + ": not a permutation of 0.." + (rank - 1)
                        + " (axis " + p + " at position " + i + ")");
            }
            seen[p] = true;
            dims[i] = shape.dim(p);
        }
        return new TensorSpec(input.spec().dtype(), Shape.of(dims));
    }

    static void checkSlice(Recipe r, int axis, long start, long end) {
        Shape shape = r.spec().shape();
        if (axis < 0 || axis >= shape.rank()) {
            throw new RecipeException("slice of " + r + ": axis " + axis + " does not exist in shape " + shape);
        }
        if (start < 0 || end < start || end > shape.dim(axis)) {
            throw new RecipeException("slice of " + r + ": range [" + start + ", " + end + ") of axis " + axis
                    + " does not fit dimension " + shape.dim(axis) + " of shape " + shape);
        }
    }

    /** True if both shapes have rank above {@code axis} and equal dimensions 0..axis. */
    static boolean samePrefix(Shape a, Shape b, int axis) {
        if (a.rank() <= axis || b.rank() <= axis) {
            return false;
        }
        for (int i = 0; i <= axis; i++) {
            if (a.dim(i) != b.dim(i)) {
                return false;
            }
        }
        return true;
    }

    static List<Recipe.Source> sourcesOf(List<Recipe> parts) {
        List<Recipe.Source> out = new ArrayList<>();
        for (Recipe p : parts) {
            out.addAll(p.sources());
        }
        return out;
    }

    /** Row-major element strides of a shape. */
    static long[] strides(Shape shape) {
        long[] s = new long[shape.rank()];
        long acc = 1;
        for (int i = shape.rank() - 1; i >= 0; i--) {
            s[i] = acc;
            acc *= shape.dim(i);
        }
        return s;
    }
}
