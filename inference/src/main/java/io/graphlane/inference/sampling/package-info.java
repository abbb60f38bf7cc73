/**
 * Token selection: {@link io.graphlane.inference.sampling.SamplingParams} (greedy, temperature,
 * top-p, seed) and a per-request {@link io.graphlane.inference.sampling.Sampler}. Guarantees: greedy
 * takes the first largest logit; sampled runs are reproducible from the seed. Refuses negative
 * temperatures and top-p outside (0, 1].
 */
package io.graphlane.inference.sampling;
