package io.graphlane.checkpoint.gguf;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.Locale;
import java.util.Map;
import java.util.OptionalLong;

/**
 * A GGUF file's metadata as a Hugging Face {@code config.json} object, a pure function: the
 * architecture from {@code general.architecture} ({@value #SUPPORTED}), the hyper-parameters from its
 * {@code <arch>.*} keys, RoPE scaling from {@code <arch>.rope.scaling.*} (and, for Llama 3's
 * frequency-dependent scaling, from the {@code rope_freqs.weight} factors that llama.cpp stores
 * instead of the parameters), the special token ids from {@code tokenizer.ggml.*} (every id that ends
 * generation, EOS, EOT and EOM, as {@code eos_token_id}), and whether the
 * output projection is tied from the tensor table. The result is what a Hugging Face checkpoint of
 * the same model would hold, so a {@code config.json} reader consumes it unchanged.
 */
public final class GgufConfig {
    /** The architectures mapped. */
    public static final String SUPPORTED = "llama, qwen2, qwen3, gemma2, phi3";

    /** The tensor llama.cpp stores Llama 3's per-dimension RoPE frequency factors in. */
    public static final String ROPE_FREQS = "rope_freqs.weight";

    /** The tensors llama.cpp stores Phi-3's LongRoPE factors in. */
    public static final String ROPE_FACTORS_LONG = "rope_factors_long.weight";

    /** See {@link #ROPE_FACTORS_LONG}. */
    public static final String ROPE_FACTORS_SHORT = "rope_factors_short.weight";

    private static final JsonNodeFactory JSON = JsonNodeFactory.instance;

    private GgufConfig() {
    }

    /**
     * The Hugging Face configuration of a GGUF model.
     *
     * @param meta the file's metadata
     * @param tensors the file's tensor table (for the vocabulary size, tied embeddings and biases)
     * @param ropeTensors the values of {@link #ROPE_FREQS}, {@link #ROPE_FACTORS_LONG} and
     *                    {@link #ROPE_FACTORS_SHORT} where the file holds them (as F32)
     * @throws GgufFormatException naming the file and the key of the first value missing or out of range
     */
    public static ObjectNode toHfConfig(GgufMetadata meta, Map<String, GgufTensorInfo> tensors,
                                        Map<String, float[]> ropeTensors) {
        String arch = meta.requireString("general.architecture", "the model's architecture");
        if (arch.equals("qwen3moe") || arch.equals("qwen2moe") || meta.integer(arch + ".expert_count").orElse(0) > 0) {
            throw new GgufFormatException(meta.file(), "metadata " + (arch.endsWith("moe") ? "'general.architecture' is \"" + arch + "\""
                    : "'" + arch + ".expert_count' is " + meta.integer(arch + ".expert_count").getAsLong())
                    + ": a mixture of experts, which graphlane reads from safetensors only (MixtralForCausalLM, Qwen3MoeForCausalLM;"
                    + " see docs/moe.md), not from GGUF yet");
        }
        String hfArch = switch (arch) {
            case "llama" -> "LlamaForCausalLM";
            case "qwen2" -> "Qwen2ForCausalLM";
            case "qwen3" -> "Qwen3ForCausalLM";
            case "gemma2" -> "Gemma2ForCausalLM";
            case "phi3" -> "Phi3ForCausalLM";
            default -> throw new GgufFormatException(meta.file(), "metadata 'general.architecture' is \"" + arch
                    + "\", expected one of " + SUPPORTED);
        };
        String p = arch + ".";
        long max = Integer.MAX_VALUE;
        long hidden = meta.requireInteger(p + "embedding_length", 1, max, "hidden_size");
        long layers = meta.requireInteger(p + "block_count", 1, max, "num_hidden_layers");
        long ffn = meta.requireInteger(p + "feed_forward_length", 1, max, "intermediate_size");
        long heads = meta.requireInteger(p + "attention.head_count", 1, max, "num_attention_heads");
        long kvHeads = meta.integer(p + "attention.head_count_kv", 1, max).orElse(heads);
        long context = meta.requireInteger(p + "context_length", 1, max, "max_position_embeddings");
        double eps = meta.number(p + "attention.layer_norm_rms_epsilon")
                .orElseThrow(() -> meta.missing(p + "attention.layer_norm_rms_epsilon", "rms_norm_eps"));
        double theta = meta.number(p + "rope.freq_base").orElse(10000.0);
        OptionalLong keyLength = meta.integer(p + "attention.key_length", 1, max);
        long headDim = keyLength.orElse(hidden / heads);
        if (keyLength.isEmpty() && hidden % heads != 0) {
            throw new GgufFormatException(meta.file(), "metadata '" + p + "embedding_length' " + hidden
                    + " is not a multiple of '" + p + "attention.head_count' " + heads + " and '" + p
                    + "attention.key_length' is missing");
        }
        long ropeDim = meta.integer(p + "rope.dimension_count", 1, max).orElse(headDim);
        if (ropeDim > headDim || ropeDim % 2 != 0) {
            throw new GgufFormatException(meta.file(), "metadata '" + p + "rope.dimension_count' is " + ropeDim
                    + ", expected an even count of at most the head dimension " + headDim);
        }
        if (heads % kvHeads != 0) {
            throw new GgufFormatException(meta.file(), "metadata '" + p + "attention.head_count_kv' " + kvHeads
                    + " does not divide '" + p + "attention.head_count' " + heads);
        }
        long vocab = vocabSize(meta, tensors, p);

        ObjectNode c = JSON.objectNode();
        c.putArray("architectures").add(hfArch);
        c.put("model_type", arch);
        c.put("hidden_size", (int) hidden);
        c.put("intermediate_size", (int) ffn);
        c.put("num_hidden_layers", (int) layers);
        c.put("num_attention_heads", (int) heads);
        c.put("num_key_value_heads", (int) kvHeads);
        if (keyLength.isPresent() || arch.equals("qwen3") || arch.equals("gemma2")) {
            c.put("head_dim", (int) headDim);
        }
        c.put("rms_norm_eps", eps);
        c.put("rope_theta", theta);
        c.put("max_position_embeddings", (int) context);
        c.put("vocab_size", (int) vocab);
        c.put("tie_word_embeddings", !tensors.containsKey("output.weight"));
        c.put("torch_dtype", "float32");
        switch (arch) {
            case "llama" -> {
                c.put("hidden_act", "silu");
                c.put("attention_bias", tensors.containsKey("blk.0.attn_q.bias"));
                c.put("mlp_bias", false);
            }
            case "qwen2" -> {
                c.put("hidden_act", "silu");
                c.put("use_sliding_window", false);
            }
            case "qwen3" -> {
                c.put("hidden_act", "silu");
                c.put("attention_bias", tensors.containsKey("blk.0.attn_q.bias"));
            }
            case "gemma2" -> {
                c.put("hidden_activation", "gelu_pytorch_tanh");
                meta.number(p + "attn_logit_softcapping").ifPresent(v -> c.put("attn_logit_softcapping", v));
                meta.number(p + "final_logit_softcapping").ifPresent(v -> c.put("final_logit_softcapping", v));
                meta.integer(p + "attention.sliding_window", 1, max).ifPresent(v -> c.put("sliding_window", (int) v));
                // llama.cpp scales queries by 1/sqrt(hidden/heads) for the 46-layer (27B) model, 1/sqrt(head_dim) otherwise
                c.put("query_pre_attn_scalar", (int) (layers == 46 ? hidden / heads : headDim));
            }
            case "phi3" -> {
                c.put("hidden_act", "silu");
                if (ropeDim != headDim) {
                    c.put("partial_rotary_factor", (double) ropeDim / headDim);
                }
                meta.integer(p + "attention.sliding_window", 1, max).ifPresent(v -> c.put("sliding_window", (int) v));
            }
            default -> throw new IllegalStateException(arch);
        }
        ObjectNode scaling = ropeScaling(meta, p, arch, theta, ropeDim, context, ropeTensors);
        if (scaling != null) {
            c.set("rope_scaling", scaling);
        }
        meta.integer("tokenizer.ggml.bos_token_id", 0, max).ifPresent(v -> c.put("bos_token_id", (int) v));
        java.util.List<Long> eos = GgufTokenizer.endOfGenerationIds(meta);
        if (eos.size() == 1) {
            c.put("eos_token_id", eos.get(0).intValue());
        } else if (!eos.isEmpty()) {
            ArrayNode ids = c.putArray("eos_token_id");
            eos.forEach(id -> ids.add(id.intValue()));
        }
        meta.integer("tokenizer.ggml.padding_token_id", 0, max).ifPresent(v -> c.put("pad_token_id", (int) v));
        return c;
    }

    private static long vocabSize(GgufMetadata meta, Map<String, GgufTensorInfo> tensors, String p) {
        GgufTensorInfo embd = tensors.get("token_embd.weight");
        if (embd == null) {
            throw new GgufFormatException(meta.file(), "tensor 'token_embd.weight' is missing (the token embedding)");
        }
        if (embd.rank() != 2) {
            throw new GgufFormatException(meta.file(), "tensor 'token_embd.weight' has " + embd.rank()
                    + " dimensions, expected 2 ([hidden, vocab] in ggml order)");
        }
        long rows = embd.ne()[1];
        OptionalLong declared = meta.integer(p + "vocab_size", 1, Integer.MAX_VALUE);
        if (declared.isPresent() && declared.getAsLong() != rows) {
            throw new GgufFormatException(meta.file(), "metadata '" + p + "vocab_size' is " + declared.getAsLong()
                    + " but tensor 'token_embd.weight' has " + rows + " rows");
        }
        return rows;
    }

    private static ObjectNode ropeScaling(GgufMetadata meta, String p, String arch, double theta, long ropeDim,
                                          long context, Map<String, float[]> ropeTensors) {
        String type = meta.string(p + "rope.scaling.type").orElse("none").toLowerCase(Locale.ROOT);
        double factor = meta.number(p + "rope.scaling.factor").orElse(0);
        OptionalLong original = meta.integer(p + "rope.scaling.original_context_length", 1, Integer.MAX_VALUE);
        float[] freqs = ropeTensors.get(ROPE_FREQS);
        if (freqs != null) {
            if (!arch.equals("llama")) {
                throw new GgufFormatException(meta.file(), "tensor '" + ROPE_FREQS + "' is read for architecture llama only, found \""
                        + arch + "\"");
            }
            return llama3Scaling(meta, theta, ropeDim, freqs);
        }
        if (ropeTensors.containsKey(ROPE_FACTORS_LONG) || ropeTensors.containsKey(ROPE_FACTORS_SHORT)) {
            float[] longF = ropeTensors.get(ROPE_FACTORS_LONG);
            float[] shortF = ropeTensors.get(ROPE_FACTORS_SHORT);
            if (longF == null || shortF == null || longF.length != ropeDim / 2 || shortF.length != ropeDim / 2) {
                throw new GgufFormatException(meta.file(), "tensors '" + ROPE_FACTORS_LONG + "' and '" + ROPE_FACTORS_SHORT
                        + "' must both hold " + ropeDim / 2 + " values (half the rotary dimension), found "
                        + (longF == null ? "none" : longF.length) + " and " + (shortF == null ? "none" : shortF.length));
            }
            ObjectNode s = JSON.objectNode();
            s.put("type", "longrope");
            s.put("rope_type", "longrope");
            ArrayNode l = s.putArray("long_factor");
            ArrayNode sh = s.putArray("short_factor");
            for (int i = 0; i < longF.length; i++) {
                l.add(longF[i]);
                sh.add(shortF[i]);
            }
            s.put("original_max_position_embeddings", (int) original.orElseThrow(() ->
                    meta.missing(p + "rope.scaling.original_context_length", "LongRoPE's original context length")));
            return s;
        }
        switch (type) {
            case "none":
                return null;
            case "linear": {
                checkFactor(meta, p, factor);
                ObjectNode s = JSON.objectNode();
                s.put("type", "linear");
                s.put("rope_type", "linear");
                s.put("factor", factor);
                return s;
            }
            case "yarn": {
                checkFactor(meta, p, factor);
                ObjectNode s = JSON.objectNode();
                s.put("type", "yarn");
                s.put("rope_type", "yarn");
                s.put("factor", factor);
                s.put("original_max_position_embeddings", (int) original.orElse(context));
                return s;
            }
            default:
                throw new GgufFormatException(meta.file(), "metadata '" + p + "rope.scaling.type' is \"" + type
                        + "\", expected none, linear or yarn");
        }
    }

    private static void checkFactor(GgufMetadata meta, String p, double factor) {
        if (!(factor >= 1.0) || Double.isInfinite(factor)) {
            throw new GgufFormatException(meta.file(), "metadata '" + p + "rope.scaling.factor' is " + factor
                    + ", expected a finite factor of at least 1");
        }
    }

    /**
     * Llama 3's scaling parameters, recovered from the per-frequency factors llama.cpp's converter
     * computed from them: the largest factor is {@code factor}, and the others must be what Meta's
     * parameters (low_freq_factor 1, high_freq_factor 4, original context 8192) give.
     */
    private static ObjectNode llama3Scaling(GgufMetadata meta, double theta, long ropeDim, float[] found) {
        if (found.length != ropeDim / 2) {
            throw new GgufFormatException(meta.file(), "tensor '" + ROPE_FREQS + "' holds " + found.length
                    + " factors, expected " + ropeDim / 2 + " (half the rotary dimension)");
        }
        double factor = 0;
        for (float f : found) {
            factor = Math.max(factor, f);
        }
        double low = 1.0;
        double high = 4.0;
        double originalContext = 8192;
        double[] expected = llama3Factors(theta, ropeDim, factor, low, high, originalContext);
        for (int i = 0; i < found.length; i++) {
            if (Math.abs(expected[i] - found[i]) > 1e-3 * Math.max(1, Math.abs(expected[i]))) {
                throw new GgufFormatException(meta.file(), "tensor '" + ROPE_FREQS + "' factor " + i + " is " + found[i]
                        + ", expected " + (float) expected[i] + " for Llama 3 RoPE scaling (factor " + factor
                        + ", low_freq_factor 1, high_freq_factor 4, original context 8192); other scalings are not read");
            }
        }
        ObjectNode s = JSON.objectNode();
        s.put("rope_type", "llama3");
        s.put("factor", factor);
        s.put("low_freq_factor", low);
        s.put("high_freq_factor", high);
        s.put("original_max_position_embeddings", (int) originalContext);
        return s;
    }

    /** The per-frequency factors llama.cpp's converter stores for Llama 3 scaling with these parameters. */
    public static double[] llama3Factors(double theta, long ropeDim, double factor, double low, double high,
                                         double originalContext) {
        int n = (int) (ropeDim / 2);
        double[] out = new double[n];
        double lowWavelen = originalContext / low;
        double highWavelen = originalContext / high;
        for (int i = 0; i < n; i++) {
            double freq = 1.0 / Math.pow(theta, (2.0 * i) / ropeDim);
            double wavelen = 2 * Math.PI / freq;
            if (wavelen < highWavelen) {
                out[i] = 1;
            } else if (wavelen > lowWavelen) {
                out[i] = factor;
            } else {
                double smooth = (originalContext / wavelen - low) / (high - low);
                out[i] = 1 / ((1 - smooth) / factor + smooth);
            }
        }
        return out;
    }
}
