package io.graphlane.checkpoint.config;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashSet;
import java.util.List;
import java.util.Objects;
import java.util.Set;

/**
 * The sparse mixture-of-experts block of Mixtral and Qwen3-MoE, read from config.json as transformers reads it
 * ({@code models/mixtral/modeling_mixtral.py} {@code MixtralSparseMoeBlock}, {@code models/qwen3_moe/modeling_qwen3_moe.py}
 * {@code Qwen3MoeSparseMoeBlock} and {@code Qwen3MoeDecoderLayer}, 4.57 and 5.x). A sparse layer's MLP is replaced by a
 * router {@code gate} ({@code experts × hidden}) and {@code expertCount} gated MLPs of width {@code expertIntermediateSize};
 * each token's router logits pass a softmax over every expert, the {@code expertsPerToken} largest probabilities are kept
 * (ties to the lower expert index), divided by their sum when {@code renormalize}, and weight the chosen experts' outputs.
 *
 * @param expertCount             experts per sparse layer ({@code num_local_experts}, Qwen3-MoE's {@code num_experts})
 * @param expertsPerToken         experts each token runs ({@code num_experts_per_tok})
 * @param expertIntermediateSize  width of each expert's MLP (Mixtral's {@code intermediate_size}, Qwen3-MoE's
 *                                {@code moe_intermediate_size})
 * @param renormalize             the kept probabilities are divided by their sum (always for Mixtral; Qwen3-MoE's
 *                                {@code norm_topk_prob})
 * @param sparseLayers            per decoder layer, true when its MLP is the sparse block (Mixtral: every layer; Qwen3-MoE:
 *                                layer {@code i} not in {@code mlp_only_layers} with {@code (i + 1) % decoder_sparse_step == 0});
 *                                the others run the dense MLP of width {@code intermediate_size}
 * @param mixtralNames            the tensors are Mixtral's ({@code block_sparse_moe.experts.N.w1/w3/w2}), else Qwen3-MoE's
 *                                ({@code mlp.experts.N.gate_proj/up_proj/down_proj})
 */
public record MoeConfig(int expertCount, int expertsPerToken, int expertIntermediateSize, boolean renormalize,
                        List<Boolean> sparseLayers, boolean mixtralNames) {
    /** The most experts per layer read (the largest open models have 256-384). */
    public static final int MAX_EXPERTS = 4096;

    /** The fields only the mixture-of-experts architectures read; refused elsewhere. */
    static final Set<String> FIELDS = Set.of("num_local_experts", "num_experts", "num_experts_per_tok", "moe_intermediate_size",
            "norm_topk_prob", "decoder_sparse_step", "mlp_only_layers", "output_router_logits", "router_aux_loss_coef",
            "router_jitter_noise");

    /** Checks the values. */
    public MoeConfig {
        Objects.requireNonNull(sparseLayers, "sparseLayers");
        if (expertCount < 1 || expertsPerToken < 1 || expertsPerToken > expertCount || expertIntermediateSize < 1) {
            throw new IllegalArgumentException("mixture of experts: need 1 <= experts per token <= experts and a positive expert width, found "
                    + expertsPerToken + " of " + expertCount + ", width " + expertIntermediateSize);
        }
        sparseLayers = List.copyOf(sparseLayers);
    }

    /** True when decoder layer {@code layer}'s MLP is the sparse block. */
    public boolean isSparse(int layer) {
        return sparseLayers.get(layer);
    }

    /** The prefix of layer {@code layer}'s sparse block: {@code model.layers.L.block_sparse_moe.} or {@code model.layers.L.mlp.}. */
    public String blockPrefix(int layer) {
        return "model.layers." + layer + (mixtralNames ? ".block_sparse_moe." : ".mlp.");
    }

    /** The router of layer {@code layer}, {@code experts × hidden}. */
    public String routerName(int layer) {
        return blockPrefix(layer) + "gate.weight";
    }

    /** The gate projection of expert {@code expert} of layer {@code layer}, {@code width × hidden}. */
    public String gateName(int layer, int expert) {
        return blockPrefix(layer) + "experts." + expert + (mixtralNames ? ".w1.weight" : ".gate_proj.weight");
    }

    /** The up projection of expert {@code expert} of layer {@code layer}, {@code width × hidden}. */
    public String upName(int layer, int expert) {
        return blockPrefix(layer) + "experts." + expert + (mixtralNames ? ".w3.weight" : ".up_proj.weight");
    }

    /** The down projection of expert {@code expert} of layer {@code layer}, {@code hidden × width}. */
    public String downName(int layer, int expert) {
        return blockPrefix(layer) + "experts." + expert + (mixtralNames ? ".w2.weight" : ".down_proj.weight");
    }

    /** How many layers are sparse. */
    public int sparseLayerCount() {
        return (int) sparseLayers.stream().filter(b -> b).count();
    }

    /** One line for {@code inspect}. */
    @Override
    public String toString() {
        return expertCount + " experts, top-" + expertsPerToken + (renormalize ? " renormalised" : " not renormalised")
                + ", expert width " + expertIntermediateSize + ", sparse layers " + sparseLayerCount() + " of " + sparseLayers.size();
    }

    /** Reads the mixture-of-experts fields of {@code f} for {@code arch} ({@link Architecture#isMoe}), {@code layers} layers. */
    static MoeConfig read(ConfigFields f, Architecture arch, int layers, int intermediate) {
        // output_router_logits and router_aux_loss_coef only add the router's auxiliary loss to the outputs
        f.bool("output_router_logits", false);
        if (f.has("router_jitter_noise") && !(f.root.get("router_jitter_noise").isNumber())) {
            throw f.refuse("router_jitter_noise", "is " + f.root.get("router_jitter_noise") + ", expected a number (it applies in training only)");
        }
        if (arch == Architecture.MIXTRAL) {
            for (String qwenOnly : List.of("num_experts", "moe_intermediate_size", "norm_topk_prob", "decoder_sparse_step", "mlp_only_layers")) {
                if (f.root.get(qwenOnly) != null) {
                    throw f.refuse(qwenOnly, "is Qwen3-MoE's, which MixtralForCausalLM does not read");
                }
            }
            // MixtralConfig's defaults: 8 experts, top-2
            int experts = f.has("num_local_experts") ? f.boundedInt("num_local_experts", MAX_EXPERTS, "the most supported experts") : 8;
            int perToken = f.has("num_experts_per_tok") ? f.positiveInt("num_experts_per_tok") : 2;
            requirePerToken(f, perToken, experts, "num_local_experts");
            return new MoeConfig(experts, perToken, intermediate, true, Collections.nCopies(layers, true), true);
        }
        if (f.root.get("num_local_experts") != null) {
            throw f.refuse("num_local_experts", "is Mixtral's; Qwen3MoeForCausalLM reads num_experts");
        }
        // Qwen3MoeConfig's defaults: 128 experts, top-8, moe_intermediate_size 768, norm_topk_prob false, step 1, no dense layers
        int experts = f.has("num_experts") ? f.boundedInt("num_experts", MAX_EXPERTS, "the most supported experts") : 128;
        int perToken = f.has("num_experts_per_tok") ? f.positiveInt("num_experts_per_tok") : 8;
        requirePerToken(f, perToken, experts, "num_experts");
        int width = f.has("moe_intermediate_size") ? f.boundedInt("moe_intermediate_size", ModelConfig.MAX_WIDTH * 8,
                "the widest supported MLP") : 768;
        boolean norm = f.bool("norm_topk_prob", false);
        int step = f.has("decoder_sparse_step") ? f.positiveInt("decoder_sparse_step") : 1;
        Set<Integer> dense = new HashSet<>();
        JsonNode only = f.root.get("mlp_only_layers");
        if (only != null && !only.isNull()) {
            if (!only.isArray()) {
                throw f.refuse("mlp_only_layers", "is " + only + ", expected a list of layer indices");
            }
            for (JsonNode i : only) {
                if (!i.isIntegralNumber() || !i.canConvertToInt() || i.intValue() < 0 || i.intValue() >= layers) {
                    throw f.refuse("mlp_only_layers", "holds " + i + ", expected layer indices from 0 to " + (layers - 1)
                            + " (num_hidden_layers " + layers + ")");
                }
                dense.add(i.intValue());
            }
        }
        List<Boolean> sparse = new ArrayList<>(layers);
        for (int i = 0; i < layers; i++) {
            sparse.add(!dense.contains(i) && (i + 1) % step == 0);
        }
        return new MoeConfig(experts, perToken, width, norm, sparse, false);
    }

    private static void requirePerToken(ConfigFields f, int perToken, int experts, String expertsField) {
        if (perToken > experts) {
            throw f.refuse("num_experts_per_tok", "is " + perToken + ", more than the " + experts + " experts (" + expertsField + ")");
        }
    }
}
