/**
 * Stages on the calling thread: {@link io.graphlane.inference.generate.StagedModel} runs a model's stages in sequence
 * (what {@code graphlane logits} runs). The tests' {@code SequentialGenerator}, which batches prefill and decode steps of
 * several requests over it, is the reference a pipelined run must equal; it lives in the test code. Guarantees: every
 * stage released when the model is closed.
 */
package io.graphlane.inference.generate;
