/**
 * Model directories: {@link io.graphlane.inference.model.ModelDirectory} opens and validates a
 * Hugging Face Llama/Mistral/Qwen2 directory (through the checkpoint module) and maps its
 * configuration onto the model code's; {@link io.graphlane.inference.model.CpuModels} builds CPU
 * stages from it. Refuses what the model code would run wrongly (such as {@code rope_scaling}).
 */
package io.graphlane.inference.model;
