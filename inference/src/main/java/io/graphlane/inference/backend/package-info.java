/**
 * What the embedded pipeline runs on: {@link io.graphlane.inference.backend.InferenceBackend} bundles
 * one device's submission backend, per-lane neural ops, the work wrapper of a stage body, and the
 * parameter backend and slots behind the materialization supervisor, so the Llama stages, the
 * supervised weight loading and the lanes are written once for every backend.
 * {@link io.graphlane.inference.backend.CpuInference} is the default; the GPU one lives in
 * {@code io.graphlane.inference.gpu}.
 *
 * <p>Guarantees: the pipeline closes the backend it opened last, after its lanes stopped and its
 * weights were closed. Refuses: tensor parallelism on any backend but the CPU.
 */
package io.graphlane.inference.backend;
