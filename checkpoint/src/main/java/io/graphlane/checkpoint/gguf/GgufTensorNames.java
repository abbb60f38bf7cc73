package io.graphlane.checkpoint.gguf;

import java.util.Map;
import java.util.Optional;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * llama.cpp's tensor names to Hugging Face's, for the architectures {@link GgufConfig} maps, as a
 * pure function both ways. A name carries the transform that undoes what llama.cpp's converter did
 * to the tensor's values:
 * <ul>
 *   <li>{@link Transform#UNPERMUTE_Q} / {@link Transform#UNPERMUTE_K} (architecture {@code llama} only):
 *       the converter's {@code permute(w, n_head, n_head_kv)} reshapes the rows of q (with {@code n_head})
 *       and k (with {@code n_head_kv}) as {@code [heads, 2, head_dim / 2, ...]} and swaps axes 1 and 2, so
 *       that llama.cpp's interleaved RoPE sees Hugging Face's rotate-half pairs; undoing it reshapes the
 *       stored rows as {@code [heads, head_dim / 2, 2, ...]} and swaps the same axes back.
 *   <li>{@link Transform#MINUS_ONE} (architecture {@code gemma2}): the converter stores every
 *       {@code *norm.weight} as {@code 1 + w}.
 * </ul>
 */
public final class GgufTensorNames {
    /** What undoes the converter's change to a tensor's values. */
    public enum Transform { NONE, UNPERMUTE_Q, UNPERMUTE_K, MINUS_ONE }

    /**
     * One mapped name.
     *
     * @param hfName the Hugging Face tensor name
     * @param transform what turns the GGUF tensor's values into the Hugging Face tensor's
     */
    public record Mapped(String hfName, Transform transform) {
    }

    private static final Pattern BLOCK = Pattern.compile("blk\\.(\\d{1,6})\\.([a-z_]+)\\.(weight|bias)");
    private static final Pattern LAYER = Pattern.compile("model\\.layers\\.(\\d{1,6})\\.(.+)\\.(weight|bias)");

    /** Names outside the blocks. */
    private static final Map<String, String> GLOBAL = Map.of(
            "token_embd", "model.embed_tokens",
            "output_norm", "model.norm",
            "output", "lm_head");

    private GgufTensorNames() {
    }

    /** The per-block name (without {@code blk.N.} and the suffix) to Hugging Face's, for {@code arch}. */
    private static Optional<String> blockPart(String arch, String part) {
        boolean gemma = arch.equals("gemma2");
        boolean phi3 = arch.equals("phi3");
        String hf = switch (part) {
            case "attn_norm" -> "input_layernorm";
            case "attn_q" -> "self_attn.q_proj";
            case "attn_k" -> "self_attn.k_proj";
            case "attn_v" -> "self_attn.v_proj";
            case "attn_output" -> "self_attn.o_proj";
            case "attn_qkv" -> phi3 ? "self_attn.qkv_proj" : null;
            case "attn_q_norm" -> "self_attn.q_norm";
            case "attn_k_norm" -> "self_attn.k_norm";
            case "ffn_norm" -> gemma ? "pre_feedforward_layernorm" : "post_attention_layernorm";
            case "post_attention_norm" -> gemma ? "post_attention_layernorm" : null;
            case "post_ffw_norm" -> gemma ? "post_feedforward_layernorm" : null;
            case "ffn_gate" -> phi3 ? null : "mlp.gate_proj";
            case "ffn_up" -> phi3 ? "mlp.gate_up_proj" : "mlp.up_proj";
            case "ffn_down" -> "mlp.down_proj";
            default -> null;
        };
        return Optional.ofNullable(hf);
    }

    /**
     * The Hugging Face name of GGUF tensor {@code name} in a model of architecture {@code arch}
     * ({@code general.architecture}), or empty if it has none (such as {@code rope_freqs.weight},
     * which the configuration takes in).
     */
    public static Optional<Mapped> toHf(String arch, String name) {
        Matcher m = BLOCK.matcher(name);
        if (m.matches()) {
            String layer = m.group(1);
            String part = m.group(2);
            String suffix = m.group(3);
            return blockPart(arch, part).map(hf -> new Mapped("model.layers." + Integer.parseInt(layer) + "." + hf + "."
                    + suffix, transform(arch, part, suffix)));
        }
        int dot = name.lastIndexOf('.');
        if (dot < 0 || !name.substring(dot + 1).equals("weight")) {
            return Optional.empty();
        }
        String base = GLOBAL.get(name.substring(0, dot));
        if (base == null) {
            return Optional.empty();
        }
        Transform t = arch.equals("gemma2") && name.equals("output_norm.weight") ? Transform.MINUS_ONE : Transform.NONE;
        return Optional.of(new Mapped(base + ".weight", t));
    }

    private static Transform transform(String arch, String part, String suffix) {
        if (arch.equals("llama")) {
            if (part.equals("attn_q")) {
                return Transform.UNPERMUTE_Q;
            }
            if (part.equals("attn_k")) {
                return Transform.UNPERMUTE_K;
            }
        }
        if (arch.equals("gemma2") && part.endsWith("norm") && suffix.equals("weight")) {
            return Transform.MINUS_ONE;
        }
        return Transform.NONE;
    }

    /**
     * The GGUF name that llama.cpp's converter gives Hugging Face tensor {@code hfName} in architecture
     * {@code arch}, or empty if it maps none; {@code toHf(arch, fromHf(arch, n))} gives {@code n} back.
     */
    public static Optional<String> fromHf(String arch, String hfName) {
        for (Map.Entry<String, String> g : GLOBAL.entrySet()) {
            if (hfName.equals(g.getValue() + ".weight")) {
                return Optional.of(g.getKey() + ".weight");
            }
        }
        Matcher m = LAYER.matcher(hfName);
        if (!m.matches()) {
            return Optional.empty();
        }
        for (String part : new String[] {"attn_norm", "attn_q", "attn_k", "attn_v", "attn_output", "attn_qkv",
                "attn_q_norm", "attn_k_norm", "ffn_norm", "post_attention_norm", "post_ffw_norm", "ffn_gate", "ffn_up",
                "ffn_down"}) {
            if (blockPart(arch, part).filter(m.group(2)::equals).isPresent()) {
                return Optional.of("blk." + Integer.parseInt(m.group(1)) + "." + part + "." + m.group(3));
            }
        }
        return Optional.empty();
    }
}
