/**
 * The backend-neutral neural operations a model needs ({@link io.graphlane.core.nn.NeuralOps}):
 * embedding, RMSNorm, linear projections, rotate-half RoPE, grouped-query attention over a
 * key/value cache, the SwiGLU gate, residual add, softmax and argmax, over dense row-major F32
 * matrices of one backend-native tensor type.
 *
 * <p>Owns: the operations' meaning (Hugging Face semantics), their shape rules and the errors
 * for broken ones. Guarantees: an implementation computes in F32 and issues its operations on
 * one lane in call order, so a model's forward pass can run as lane work. Refuses: mixed
 * shapes ({@link io.graphlane.core.nn.ShapeMismatchException}), and anything that is not a
 * tensor of its own backend. Model architectures live in {@code graphlane-inference};
 * implementations live in the backend modules.
 */
package io.graphlane.core.nn;
