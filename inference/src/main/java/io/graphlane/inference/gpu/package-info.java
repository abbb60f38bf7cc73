/**
 * The embedded pipeline on a CUDA device: {@link io.graphlane.inference.gpu.GpuInference} plugs the GPU
 * backend ({@code graphlane-backend-gpu}) into {@code InferencePipeline.builder().backend(...)}.
 *
 * <p>{@code graphlane-inference} declares {@code graphlane-backend-gpu} as an optional dependency: an
 * application that uses this package adds it (the {@code graphlane} command does); one that only runs on
 * the CPU never loads a class of it. Nothing here needs a GPU to build or test; opening a device where
 * CUDA is not usable fails with one line naming what is missing and suggesting {@code --backend cpu}.
 */
package io.graphlane.inference.gpu;
