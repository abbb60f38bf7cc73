/**
 * Pipeline partitioning of a model: {@link io.graphlane.inference.stage.StagePlan} splits the
 * decoder layers into balanced contiguous {@link io.graphlane.inference.stage.StageSpec}s
 * (CONTRACTS.md, Topology). Stage 0 owns the embedding, the last stage the final norm and the
 * head. Refuses more stages than layers.
 */
package io.graphlane.inference.stage;
