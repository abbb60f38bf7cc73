/**
 * Models larger than the device: decoder layers held in host memory and promoted to the device on a stage's transfer
 * lane before each use (docs/offload.md).
 *
 * <p>Owns: {@link io.graphlane.inference.offload.OffloadPlan} (which layers stay resident under a weights budget),
 * {@link io.graphlane.inference.offload.LayerStreaming} (a streamed stage's step as compute and transfer lane
 * submissions ordered by completion handles), {@link io.graphlane.inference.offload.PromotedLayer} (one step's device
 * copy of a layer, freed after its promotion and its reader both completed) and
 * {@link io.graphlane.inference.offload.TransferSubmissions} (the lane group's backend, through which a transfer
 * lane's actor starts promotions with {@code TransferBackend.promote}).
 *
 * <p>Guarantees: a compute work reads a promoted layer only after the promotion's exact completion; a stage holds at
 * most {@code lookahead + 1} promoted layers in device order; a promoted copy is freed once, after its last reader
 * completed; a failed promotion fails only the works ordered after it.
 *
 * <p>Refuses: a budget smaller than the fixed weights plus each streaming stage's largest layer, naming both sizes.
 */
package io.graphlane.inference.offload;
