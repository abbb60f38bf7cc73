/**
 * Token selection: {@link io.graphlane.inference.sampling.SamplingParams} (greedy, temperature,
 * top-p, top-k, min-p, seed, repetition, presence and frequency penalties, logit bias, log-probabilities), a
 * per-request {@link io.graphlane.inference.sampling.Sampler}, the request's typed sampling state (it knows the prompt
 * and counts the tokens it chose for the penalties) and the one place a pipeline samples, on every backend, and
 * {@link io.graphlane.inference.sampling.GenerationDefaults}, a model's {@code generation_config.json} sampling
 * defaults. Guarantees: the bias, the repetition penalty and the presence and frequency penalties are applied in
 * vLLM's order before any choice, greedy included; greedy takes the first largest adjusted logit; a draw filters by
 * min-p, then top-k, then top-p on what is left (vLLM's order), renormalizing each time; sampled runs are reproducible
 * from the seed; log-probabilities (the log-softmax of the adjusted logits, and the top alternatives, largest first)
 * are computed only when asked for. Refuses negative temperatures, top-p outside (0, 1], top-k below -1, min-p
 * outside [0, 1], a repetition penalty not above 0, penalties outside [-2, 2], biases outside [-100, 100], more than
 * 20 alternatives.
 */
package io.graphlane.inference.sampling;
