package io.graphlane.checkpoint.config;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.Iterator;
import java.util.Set;

/**
 * Every config.json field graphlane knows, in three lists: those that change the model's math and that the reader
 * applies ({@link #APPLIED}), those the attention window reads ({@link #WINDOW}), and those that cannot change a
 * forward pass ({@link #HARMLESS}: bookkeeping, token ids, training-only dropouts, generation defaults). Any other
 * field is refused, naming it: an unknown field may change the math, and loading it anyway would give silently
 * wrong output.
 */
final class ConfigFieldList {
    /** Fields that change the math, each applied by {@link ModelConfig#parse} (or refused there for values it cannot run). */
    static final Set<String> APPLIED = Set.of("architectures", "model_type", "hidden_size", "intermediate_size",
            "num_hidden_layers", "num_attention_heads", "num_key_value_heads", "head_dim", "vocab_size",
            "max_position_embeddings", "rms_norm_eps", "rope_theta", "rope_scaling", "rope_parameters",
            "partial_rotary_factor", "original_max_position_embeddings", "tie_word_embeddings", "attention_bias", "mlp_bias",
            "hidden_act", "torch_dtype", "dtype");

    /** Fields of the attention window (sliding-window layers), read where the model directory sets up attention. */
    static final Set<String> WINDOW = Set.of("sliding_window", "use_sliding_window", "max_window_layers", "layer_types");

    /** Fields that cannot change a forward pass at inference. */
    static final Set<String> HARMLESS = Set.of(
            // bookkeeping
            "_name_or_path", "transformers_version", "auto_map", "tokenizer_class", "id2label", "label2id", "problem_type",
            "finetuning_task", "prefix", "task_specific_params", "_attn_implementation_autoset", "architectures_version",
            // token ids (the tokenizer's and generation's business, not the forward pass's)
            "bos_token_id", "eos_token_id", "pad_token_id", "sep_token_id", "decoder_start_token_id",
            // training-only: dropouts are off at inference, initialization is replaced by the weights, tensor-parallel
            // pretraining splits (pretraining_tp) compute the same products
            "attention_dropout", "hidden_dropout", "embd_pdrop", "resid_pdrop", "initializer_range", "pretraining_tp",
            "use_cache", "tf_legacy_loss", "torchscript", "use_bfloat16", "pruned_heads", "chunk_size_feed_forward",
            // output switches of transformers' modules
            "output_attentions", "output_hidden_states", "return_dict", "use_return_dict", "output_scores",
            "return_dict_in_generate", "is_decoder", "is_encoder_decoder", "add_cross_attention", "tie_encoder_decoder",
            "cross_attention_hidden_size",
            // generation defaults that old transformers copied into config.json (generation_config.json governs sampling)
            "max_length", "min_length", "do_sample", "early_stopping", "num_beams", "num_beam_groups", "diversity_penalty",
            "temperature", "top_k", "top_p", "typical_p", "repetition_penalty", "length_penalty", "no_repeat_ngram_size",
            "encoder_no_repeat_ngram_size", "bad_words_ids", "num_return_sequences", "forced_bos_token_id",
            "forced_eos_token_id", "remove_invalid_values", "exponential_decay_length_penalty", "suppress_tokens",
            "begin_suppress_tokens");

    /**
     * Fields of Gemma configs that change no output: the generation cache default ({@code cache_implementation:
     * "hybrid"}), and the {@code sliding_window_size} some early Gemma 2 configs carry, which transformers' Gemma2Config
     * never reads (the window is {@code sliding_window}).
     */
    static final Set<String> GEMMA_HARMLESS = Set.of("cache_implementation", "sliding_window_size");

    private ConfigFieldList() {
    }

    /** Refuses any field of {@code f} on no list, and the listed fields whose value {@code arch} cannot run. */
    static void check(ConfigFields f, Architecture arch) {
        for (Iterator<String> names = f.root.fieldNames(); names.hasNext(); ) {
            String name = names.next();
            if (name.equals("use_mrope")) {
                if (f.bool(name, false)) {
                    throw f.refuse(name, "is true: multimodal RoPE is not supported");
                }
                continue;
            }
            if (name.equals("quantization_config")) {
                throw f.refuse(name, "is present: graphlane reads unquantized checkpoints (F32, F16, BF16) only");
            }
            if (arch.isGemma() && (GemmaConfig.FIELDS.contains(name) || GEMMA_HARMLESS.contains(name))) {
                continue;
            }
            if (arch.isMoe() && MoeConfig.FIELDS.contains(name)) {
                continue;
            }
            if (!APPLIED.contains(name) && !WINDOW.contains(name) && !HARMLESS.contains(name)) {
                JsonNode v = f.root.get(name);
                String shown = v.toString().length() > 60 ? v.toString().substring(0, 60) + "..." : v.toString();
                throw f.refuse(name, "(" + shown + ") is not one graphlane knows for " + arch.hfName()
                        + "; it may change the model's math, so the model is refused rather than run wrong");
            }
        }
        if (arch != Architecture.LLAMA && arch != Architecture.QWEN3 && arch != Architecture.QWEN3_MOE && !arch.isGemma()
                && f.bool("attention_bias", false)) {
            throw f.refuse("attention_bias", "is true, but " + arch.hfName() + " has no such option");
        }
        if (arch != Architecture.LLAMA && f.bool("mlp_bias", false)) {
            throw f.refuse("mlp_bias", "is true, but " + arch.hfName() + " has no such option");
        }
    }
}
