package io.graphlane.inference.pipeline;

import io.graphlane.inference.llama.LlamaConfig;

/**
 * What a decode step must read, and the fastest it could therefore go: every layer's projections, MLP and
 * norms, the final norm and the head once per step whatever the number of requests in it, plus one embedding
 * row per request. At {@code bandwidth} bytes/s one request cannot decode faster than
 * {@code bandwidth / weightBytesPerToken} tokens/s; R requests sharing each read can reach R times that
 * until the products become compute-bound, which a measured R-row product accounts for.
 *
 * @param weightBytesPerToken the weight bytes one decode step of one request reads
 */
public record DecodeBound(long weightBytesPerToken) {

    /** The bytes one decode step reads from a model with {@code config}, its weights held as {@code bytesPerWeight}-byte values. */
    public static DecodeBound of(LlamaConfig c, int bytesPerWeight) {
        long hidden = c.hiddenSize();
        long perLayer = hidden * c.queryWidth()          // q
                + 2 * hidden * c.kvWidth()                // k, v
                + (long) c.queryWidth() * hidden          // o
                + 3 * hidden * c.intermediateSize()       // gate, up, down
                + 2 * hidden;                             // the two norms
        if (c.qkvBias()) {
            perLayer += c.queryWidth() + 2L * c.kvWidth();
        }
        if (c.outputBias()) {
            perLayer += hidden;
        }
        long weights = perLayer * c.layerCount()
                + hidden                                  // final norm
                + (long) c.vocabSize() * hidden           // head (the embedding table itself when tied)
                + hidden;                                 // the token's embedding row
        return new DecodeBound(weights * bytesPerWeight);
    }

    /** The fastest one request can decode, in tokens/s, at {@code bytesPerSecond}. */
    public double limitTokensPerSecond(double bytesPerSecond) {
        return bytesPerSecond / weightBytesPerToken;
    }
}
