package io.graphlane.checkpoint.config;

import com.fasterxml.jackson.databind.JsonNode;
import io.graphlane.checkpoint.config.RopeConfig.Type;
import java.util.Arrays;
import java.util.Iterator;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Reads the rotary embedding from either layout transformers writes: 4.x's top-level {@code rope_theta},
 * {@code rope_scaling} (with {@code rope_type}, or the legacy {@code type}) and {@code partial_rotary_factor}, and
 * 5.x's {@code rope_parameters} (the same keys plus {@code rope_theta} in one object, or one such object per layer
 * type). Every key of the rope object is applied or refused, naming it.
 */
final class RopeReader {
    /** The keys each variant reads, besides {@code rope_type}/{@code type}, {@code rope_theta} and {@code partial_rotary_factor}. */
    private static final Map<Type, List<String>> KEYS = Map.of(
            Type.DEFAULT, List.of(),
            Type.LINEAR, List.of("factor"),
            Type.DYNAMIC, List.of("factor"),
            Type.LLAMA3, List.of("factor", "low_freq_factor", "high_freq_factor", "original_max_position_embeddings"),
            Type.YARN, List.of("factor", "original_max_position_embeddings", "attention_factor", "beta_fast", "beta_slow",
                    "mscale", "mscale_all_dim", "truncate"),
            Type.LONGROPE, List.of("short_factor", "long_factor", "factor", "original_max_position_embeddings",
                    "attention_factor"));

    private RopeReader() {
    }

    /** The rotary embedding of config {@code top} for heads of {@code headDim} and a context of {@code maxPositions}. */
    static RopeConfig read(ConfigFields top, int headDim, int maxPositions) {
        JsonNode parameters = top.root.get("rope_parameters");
        JsonNode scaling = top.root.get("rope_scaling");
        boolean hasParameters = parameters != null && !parameters.isNull();
        boolean hasScaling = scaling != null && !scaling.isNull();
        if (!hasParameters) {
            ConfigFields rope = hasScaling ? object(top, "rope_scaling", scaling, "rope_scaling.") : null;
            return readOne(top, rope, headDim, maxPositions);
        }
        ConfigFields rope = object(top, "rope_parameters", parameters, "rope_parameters.");
        if (isPerLayerType(parameters)) {
            rope = perLayerType(top, parameters);
        }
        RopeConfig fromParameters = readOne(top, rope, headDim, maxPositions);
        if (top.has("rope_theta") && top.positiveDouble("rope_theta") != fromParameters.theta()) {
            throw top.refuse("rope_theta", "is " + top.positiveDouble("rope_theta") + " but 'rope_parameters' says rope_theta "
                    + fromParameters.theta() + "; a config must not contradict itself");
        }
        if (hasScaling) {
            RopeConfig fromScaling = readOne(top, object(top, "rope_scaling", scaling, "rope_scaling."), headDim, maxPositions);
            if (!fromScaling.equals(fromParameters)) {
                throw top.refuse("rope_scaling", "is " + scaling + " but 'rope_parameters' is " + parameters
                        + "; a config must not contradict itself");
            }
        }
        return fromParameters;
    }

    /**
     * Gemma 3's two rotary embeddings, {@code [full-attention layers, sliding layers]}, from either layout:
     * 4.x's {@code rope_theta} (default 1e6) with {@code rope_scaling} for the full-attention layers and a default RoPE
     * with base {@code rope_local_base_freq} (default 10000) for the sliding ones (Gemma3TextModel's
     * {@code rotary_emb_local}); or 5.x's {@code rope_parameters} with one object per layer type, whose missing
     * {@code rope_theta} defaults as Gemma3TextConfig's do (1e6 full, 10000 sliding).
     */
    static RopeConfig[] gemma3(ConfigFields top, int headDim, int maxPositions) {
        JsonNode parameters = top.root.get("rope_parameters");
        if (parameters != null && parameters.isObject() && isPerLayerType(parameters)) {
            for (Iterator<String> names = parameters.fieldNames(); names.hasNext(); ) {
                String name = names.next();
                if (!name.equals("full_attention") && !name.equals("sliding_attention")) {
                    throw top.refuse("rope_parameters." + name, "is a layer type Gemma 3 does not have (it has full_attention and "
                            + "sliding_attention)");
                }
            }
            JsonNode scaling = top.root.get("rope_scaling");
            if (scaling != null && !scaling.isNull()) {
                throw top.refuse("rope_scaling", "is " + scaling + " next to per-layer-type 'rope_parameters'; a config holds one or "
                        + "the other");
            }
            RopeConfig full = readOne(top, layerType(top, parameters, "full_attention", 1_000_000.0), headDim, maxPositions);
            RopeConfig sliding = readOne(top, layerType(top, parameters, "sliding_attention", 10_000.0), headDim, maxPositions);
            if (top.has("rope_theta") && top.positiveDouble("rope_theta") != full.theta()) {
                throw top.refuse("rope_theta", "is " + top.root.get("rope_theta") + " but 'rope_parameters.full_attention' says "
                        + full.theta() + "; a config must not contradict itself");
            }
            if (top.has("rope_local_base_freq") && top.positiveDouble("rope_local_base_freq") != sliding.theta()) {
                throw top.refuse("rope_local_base_freq", "is " + top.root.get("rope_local_base_freq")
                        + " but 'rope_parameters.sliding_attention' says rope_theta " + sliding.theta()
                        + "; a config must not contradict itself");
            }
            return new RopeConfig[] {full, sliding};
        }
        ConfigFields withTheta = top;
        if (!top.has("rope_theta") && (parameters == null || parameters.isNull())) {
            com.fasterxml.jackson.databind.node.ObjectNode copy = ((com.fasterxml.jackson.databind.node.ObjectNode) top.root).deepCopy();
            copy.put("rope_theta", 1_000_000.0);   // Gemma3TextConfig's default
            withTheta = new ConfigFields(top.file, copy, "");
        }
        RopeConfig full = read(withTheta, headDim, maxPositions);
        RopeConfig sliding = RopeConfig.plain(top.positiveDouble("rope_local_base_freq", 10_000.0), maxPositions);
        return new RopeConfig[] {full, sliding};
    }

    /** 5.x's parameters of one layer type, with Gemma 3's default base when they name none. */
    private static ConfigFields layerType(ConfigFields top, JsonNode parameters, String type, double defaultTheta) {
        JsonNode node = parameters.get(type);
        if (node == null) {
            throw top.refuse("rope_parameters", "has no '" + type + "' entry; Gemma 3 needs the rotary parameters of both layer types");
        }
        if (!node.has("rope_theta") || node.get("rope_theta").isNull()) {
            com.fasterxml.jackson.databind.node.ObjectNode copy = ((com.fasterxml.jackson.databind.node.ObjectNode) node).deepCopy();
            copy.put("rope_theta", defaultTheta);
            node = copy;
        }
        return new ConfigFields(top.file, node, "rope_parameters." + type + ".");
    }

    private static ConfigFields object(ConfigFields top, String name, JsonNode node, String prefix) {
        if (!node.isObject()) {
            throw top.refuse(name, "is " + node + ", expected an object");
        }
        return new ConfigFields(top.file, node, prefix);
    }

    /** 5.x's per-layer-type form: every value an object (e.g. {@code {"full_attention": {...}, "sliding_attention": {...}}}). */
    private static boolean isPerLayerType(JsonNode parameters) {
        if (parameters.isEmpty()) {
            return false;
        }
        for (Iterator<JsonNode> it = parameters.elements(); it.hasNext(); ) {
            if (!it.next().isObject()) {
                return false;
            }
        }
        return true;
    }

    /** One set of parameters for every layer: refused when the layer types' sets differ (Gemma 3's local/global bases). */
    private static ConfigFields perLayerType(ConfigFields top, JsonNode parameters) {
        Iterator<Map.Entry<String, JsonNode>> it = parameters.fields();
        Map.Entry<String, JsonNode> first = it.next();
        while (it.hasNext()) {
            Map.Entry<String, JsonNode> other = it.next();
            if (!other.getValue().equals(first.getValue())) {
                throw top.refuse("rope_parameters", "gives layer type '" + first.getKey() + "' " + first.getValue()
                        + " and layer type '" + other.getKey() + "' " + other.getValue()
                        + "; graphlane applies one set of rotary parameters to every layer");
            }
        }
        return new ConfigFields(top.file, first.getValue(), "rope_parameters." + first.getKey() + ".");
    }

    private static RopeConfig readOne(ConfigFields top, ConfigFields rope, int headDim, int maxPositions) {
        Type type = type(rope);
        if (rope != null) {
            Set<String> known = new LinkedHashSet<>(List.of("rope_type", "type", "rope_theta", "partial_rotary_factor"));
            known.addAll(KEYS.get(type));
            for (Iterator<String> names = rope.root.fieldNames(); names.hasNext(); ) {
                String name = names.next();
                if (!known.contains(name)) {
                    throw rope.refuse(name, "is not a parameter of rope_type '" + type.hfName() + "' graphlane applies (it reads "
                            + String.join(", ", KEYS.get(type).isEmpty() ? List.of("rope_theta") : KEYS.get(type)) + ")");
                }
            }
        }
        double theta = rope != null && rope.has("rope_theta") ? rope.positiveDouble("rope_theta")
                : top.positiveDouble("rope_theta", 10_000.0);
        double partial = rope != null && rope.has("partial_rotary_factor") ? rope.positiveDouble("partial_rotary_factor")
                : top.positiveDouble("partial_rotary_factor", 1.0);
        ConfigFields partialField = rope != null && rope.has("partial_rotary_factor") ? rope : top;
        if (partial > 1.0) {
            throw partialField.refuse("partial_rotary_factor", "is " + partial + ", expected a share of the head in (0, 1]");
        }
        int rotaryDim = (int) (headDim * partial);
        if (rotaryDim < 2 || rotaryDim % 2 != 0) {
            throw partialField.refuse("partial_rotary_factor", "is " + partial + ", which rotates " + rotaryDim + " of the "
                    + headDim + " features of a head; expected an even number of at least 2");
        }
        if (type == Type.DYNAMIC && rotaryDim == 2) {
            throw partialField.refuse("partial_rotary_factor", "leaves 2 rotating features, for which dynamic scaling divides by zero");
        }
        boolean hasOriginal = rope != null && rope.has("original_max_position_embeddings");
        boolean hasTopOriginal = top.has("original_max_position_embeddings");
        // Phi-3's top-level original_max_position_embeddings wins over the rope object's, as in transformers;
        // dynamic scaling grows from max_position_embeddings
        int original = type == Type.DYNAMIC ? maxPositions
                : hasTopOriginal ? top.positiveInt("original_max_position_embeddings")
                : hasOriginal ? rope.positiveInt("original_max_position_embeddings") : maxPositions;
        if (type == Type.DEFAULT) {
            return new RopeConfig(type, theta, partial, 1.0, original, maxPositions, 0, 0, 32, 1, 0, 0, true, 1.0,
                    new double[0], new double[0]);
        }
        double factor = switch (type) {
            case LONGROPE -> rope.has("factor") ? rope.positiveDouble("factor") : maxPositions / (double) original;
            case YARN -> rope.has("factor") ? rope.positiveDouble("factor") : maxPositions / (double) original;
            default -> rope.positiveDouble("factor");
        };
        double low = 0;
        double high = 0;
        double betaFast = 32;
        double betaSlow = 1;
        double mscale = 0;
        double mscaleAllDim = 0;
        boolean truncate = true;
        double attention = 1.0;
        double[] shortFactor = new double[0];
        double[] longFactor = new double[0];
        switch (type) {
            case LLAMA3 -> {
                if (!hasOriginal) {
                    throw rope.refuse("original_max_position_embeddings", "is missing; rope_type 'llama3' needs the pretrained context");
                }
                low = rope.positiveDouble("low_freq_factor");
                high = rope.positiveDouble("high_freq_factor");
                if (!(high > low)) {
                    throw rope.refuse("high_freq_factor", "is " + high + ", expected more than low_freq_factor " + low);
                }
            }
            case YARN -> {
                betaFast = rope.positiveDouble("beta_fast", 32);
                betaSlow = rope.positiveDouble("beta_slow", 1);
                mscale = rope.positiveDouble("mscale", 0);
                mscaleAllDim = rope.positiveDouble("mscale_all_dim", 0);
                truncate = rope.bool("truncate", true);
                if (rope.has("attention_factor")) {
                    attention = rope.positiveDouble("attention_factor");
                } else if (mscale > 0 && mscaleAllDim > 0) {
                    attention = RopeConfig.yarnMscale(factor, mscale) / RopeConfig.yarnMscale(factor, mscaleAllDim);
                } else {
                    attention = RopeConfig.yarnMscale(factor, 1.0);
                }
            }
            case LONGROPE -> {
                shortFactor = rope.positiveDoubles("short_factor", rotaryDim / 2);
                longFactor = rope.positiveDoubles("long_factor", rotaryDim / 2);
                if (rope.has("attention_factor")) {
                    attention = rope.positiveDouble("attention_factor");
                } else {
                    attention = factor <= 1.0 ? 1.0 : Math.sqrt(1 + Math.log(factor) / Math.log(original));
                }
            }
            default -> { }
        }
        return new RopeConfig(type, theta, partial, factor, original, maxPositions, low, high, betaFast, betaSlow, mscale,
                mscaleAllDim, truncate, attention, shortFactor, longFactor);
    }

    private static Type type(ConfigFields rope) {
        if (rope == null) {
            return Type.DEFAULT;
        }
        String field = rope.has("rope_type") ? "rope_type" : "type";
        String name = rope.optionalString(field).orElse("default");
        if (rope.has("rope_type") && rope.has("type") && !rope.optionalString("type").get().equals(name)) {
            throw rope.refuse("type", "is '" + rope.optionalString("type").get() + "' but 'rope_type' is '" + name + "'");
        }
        return Arrays.stream(Type.values()).filter(t -> t.hfName().equals(name)).findFirst().orElseThrow(() ->
                rope.refuse(field, "is '" + name + "', which graphlane does not apply; supported: "
                        + String.join(", ", Arrays.stream(Type.values()).map(Type::hfName).toList())));
    }
}
