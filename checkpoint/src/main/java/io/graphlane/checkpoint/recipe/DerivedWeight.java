package io.graphlane.checkpoint.recipe;

import io.graphlane.checkpoint.CheckpointSource;
import io.graphlane.core.param.EncodedLease;
import io.graphlane.core.param.WeightRecipe;
import io.graphlane.core.tensor.TensorSpec;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Objects;

/**
 * A named weight derived by a validated {@link Recipe}: the {@link WeightRecipe} a parameter
 * backend materializes. Building it checks that every step's result fits one buffer; nothing is
 * read until {@link #evaluate}. {@link #shard} gives a tensor-parallel part whose range is pushed
 * down to the sources.
 */
public final class DerivedWeight implements WeightRecipe {
    private final String name;
    private final Recipe recipe;

    private DerivedWeight(String name, Recipe recipe) {
        this.name = name;
        this.recipe = recipe;
    }

    /**
     * The weight {@code name} derived by {@code recipe}.
     *
     * @throws RecipeException naming the weight and the step if a step's result is over 2 GiB
     */
    public static DerivedWeight of(String name, Recipe recipe) {
        Objects.requireNonNull(name, "name");
        Objects.requireNonNull(recipe, "recipe");
        checkSizes(name, recipe);
        return new DerivedWeight(name, recipe);
    }

    /** A weight that is tensor {@code key} of {@code source} under the name {@code name} (a rename). */
    public static DerivedWeight renamed(String name, CheckpointSource source, String key) {
        return of(name, Recipe.source(source, key));
    }

    private static void checkSizes(String name, Recipe r) {
        if (r.spec().byteSize() > CheckpointSource.MAX_LEASE_BYTES) {
            throw new RecipeException("weight '" + name + "': recipe step " + r + " yields " + r.spec() + ", "
                    + r.spec().byteSize() + " bytes, over the " + CheckpointSource.MAX_LEASE_BYTES
                    + " bytes one buffer holds; derive it in shards");
        }
        if (r instanceof Recipe.Concat c) {
            c.parts().forEach(p -> checkSizes(name, p));
        } else if (r instanceof Recipe.Stack s) {
            s.parts().forEach(p -> checkSizes(name, p));
        } else if (r instanceof Recipe.Select s) {
            checkSizes(name, s.input());
        } else if (r instanceof Recipe.Reshape s) {
            checkSizes(name, s.input());
        } else if (r instanceof Recipe.Transpose s) {
            checkSizes(name, s.input());
        } else if (r instanceof Recipe.Cast s) {
            checkSizes(name, s.input());
        } else if (r instanceof Recipe.View s) {
            checkSizes(name, s.input());
        } else if (r instanceof Recipe.QuantizeQ8 s) {
            checkSizes(name, s.input());
        } else if (r instanceof Recipe.Dequantize s) {
            checkSizes(name, s.input());
        } else if (r instanceof Recipe.RepackQ8 s) {
            checkSizes(name, s.input());
        } else if (r instanceof Recipe.Offset s) {
            checkSizes(name, s.input());
        }
    }

    /** The recipe. */
    public Recipe recipe() {
        return recipe;
    }

    /**
     * This weight's indices [start, end) of {@code axis} (a tensor-parallel shard), under the same
     * name, reading only what the pushed-down selections need.
     */
    public DerivedWeight shard(int axis, long start, long end) {
        return of(name, recipe.slice(axis, start, end));
    }

    @Override
    public String name() {
        return name;
    }

    @Override
    public TensorSpec output() {
        return recipe.spec();
    }

    /**
     * Leases every source selection in {@link Recipe#sources()} order; if one fails, those already
     * taken are released before the failure is rethrown.
     */
    @Override
    public List<EncodedLease> acquireSources() {
        List<EncodedLease> leases = new ArrayList<>();
        try {
            for (Recipe.Source s : recipe.sources()) {
                leases.add(s.source().lease(s.key(), s.selection()));
            }
            return leases;
        } catch (RuntimeException e) {
            for (EncodedLease l : leases) {
                l.release();
            }
            throw e;
        }
    }

    /**
     * Writes the derived weight, dense little-endian in {@link #output()}'s dtype, at {@code out}'s
     * position and advances it past the weight's bytes.
     *
     * @throws RecipeException naming the weight if the leases do not match the sources or {@code out} is too small
     */
    @Override
    public void evaluate(List<EncodedLease> sources, ByteBuffer out) {
        List<Recipe.Source> expected = recipe.sources();
        if (sources.size() != expected.size()) {
            throw new RecipeException("weight '" + name + "': " + sources.size() + " source leases given, expected "
                    + expected.size() + " (" + expected + ")");
        }
        List<ByteBuffer> bytes = new ArrayList<>();
        for (int i = 0; i < sources.size(); i++) {
            EncodedLease lease = sources.get(i);
            if (!lease.spec().equals(expected.get(i).spec())) {
                throw new RecipeException("weight '" + name + "': source lease " + i + " '" + lease.name() + "' is "
                        + lease.spec() + ", expected " + expected.get(i).spec() + " for " + expected.get(i));
            }
            bytes.add(lease.bytes());
        }
        long size = output().byteSize();
        if (out.remaining() < size) {
            throw new RecipeException("weight '" + name + "': output buffer has " + out.remaining()
                    + " bytes left, expected " + size + " for " + output());
        }
        ByteBuffer dest = out.slice(out.position(), (int) size).order(java.nio.ByteOrder.LITTLE_ENDIAN);
        Iterator<ByteBuffer> it = bytes.iterator();
        Evaluator.eval(recipe, it, dest);
        out.position(out.position() + (int) size);
    }

    /** Evaluates into a new off-heap buffer, leasing and releasing the sources itself (for tests and tools). */
    public ByteBuffer evaluateToBuffer() {
        List<EncodedLease> leases = acquireSources();
        try {
            ByteBuffer out = Evaluator.allocate(output().byteSize());
            evaluate(leases, out);
            return out.flip();
        } finally {
            for (EncodedLease l : leases) {
                l.release();
            }
        }
    }

    @Override
    public String toString() {
        return "weight '" + name + "' " + output() + " = " + recipe;
    }
}
