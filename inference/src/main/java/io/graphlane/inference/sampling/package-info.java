/**
 * Token selection: {@link io.graphlane.inference.sampling.SamplingParams} (greedy, temperature,
 * top-p, seed, presence and frequency penalties, logit bias, log-probabilities) and a per-request
 * {@link io.graphlane.inference.sampling.Sampler}, the request's typed sampling state (it counts the tokens it chose
 * for the penalties) and the one place a pipeline samples. Guarantees: the bias and penalties (OpenAI's formulas) are
 * applied before any choice, greedy included; greedy takes the first largest adjusted logit; sampled runs are
 * reproducible from the seed; log-probabilities (the log-softmax of the adjusted logits, and the top alternatives,
 * largest first) are computed only when asked for. Refuses negative temperatures, top-p outside (0, 1], penalties
 * outside [-2, 2], biases outside [-100, 100], more than 20 alternatives.
 */
package io.graphlane.inference.sampling;
