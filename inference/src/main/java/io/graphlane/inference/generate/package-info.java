/**
 * Generation on the calling thread: {@link io.graphlane.inference.generate.StagedModel} runs a
 * model's stages in sequence, {@link io.graphlane.inference.generate.SequentialGenerator} batches
 * prefill and decode steps of several requests over it. Guarantees: the tokens a pipelined run
 * must equal, and every KV cache freed when its request ends (also on failure).
 */
package io.graphlane.inference.generate;
