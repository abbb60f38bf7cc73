package io.graphlane.core.param;

import io.graphlane.core.tensor.TensorSpec;
import java.nio.ByteBuffer;
import java.util.List;

/**
 * A validated derivation of one weight from source tensors (select, concatenate, stack,
 * reshape, transpose, cast, view). Its output spec is inferred and its steps validated
 * before any byte is read; the checkpoint module builds recipes.
 */
public interface WeightRecipe {

    /** The name of the derived weight. */
    String name();

    /** The inferred dtype and shape of the derived weight. */
    TensorSpec output();

    /** Acquires one lease per source tensor selection, in the order {@link #evaluate} expects them. */
    List<EncodedLease> acquireSources();

    /** Writes the derived weight, dense and little-endian in {@link #output()}'s dtype, into {@code out}. */
    void evaluate(List<EncodedLease> sources, ByteBuffer out);
}
