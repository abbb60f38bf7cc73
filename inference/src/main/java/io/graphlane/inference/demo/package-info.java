/**
 * The built-in demo model ({@link io.graphlane.inference.demo.DemoModel}): Llama architecture,
 * weights from a fixed seed ({@link io.graphlane.inference.demo.SeededWeights}), byte-level
 * tokenizer, written once into a cache directory by an atomic rename. Its tokens are not
 * meaningful text. Refuses to write into a non-empty directory that does not hold the model.
 */
package io.graphlane.inference.demo;
