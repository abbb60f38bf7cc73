/**
 * Derived weights: a {@link io.graphlane.checkpoint.recipe.Recipe} builds one weight from checkpoint
 * tensors by source (key + selection, also a rename), select, concatenate (fused qkv, gate/up),
 * stack, reshape, transpose, cast (to F32, F16, BF16, F64), view (bit reinterpretation of equal
 * byte count), quantizeQ8 and dequantize (raw {@link io.graphlane.checkpoint.recipe.BlockFormat} blocks to F32); {@link io.graphlane.checkpoint.recipe.DerivedWeight} is the resulting
 * {@link io.graphlane.core.param.WeightRecipe}. Guarantees: every step is validated and its output
 * inferred when built, before a byte is read; a tensor-parallel shard ({@code slice}) is pushed down
 * to the sources and equals the same slice of the full result. Refuses mismatched dtypes, ranks,
 * dimensions, axes, permutations and byte counts, naming the step and the expected and found values.
 */
package io.graphlane.checkpoint.recipe;
