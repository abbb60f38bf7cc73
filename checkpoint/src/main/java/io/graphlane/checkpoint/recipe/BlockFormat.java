package io.graphlane.checkpoint.recipe;

import java.nio.ByteBuffer;

/**
 * A block-quantized encoding that the {@code dequantize} recipe step decodes to F32: a row of
 * {@code n} values is {@code n / blockValues()} blocks of {@code blockBytes()} bytes each, every
 * block decoding on its own. The checkpoint formats that hold such blocks (GGUF's quant types)
 * implement it; the recipe package knows no format.
 */
public interface BlockFormat {
    /** The format's name, for recipe descriptions and errors (e.g. {@code Q4_K}). */
    String name();

    /** Values one block decodes to. */
    int blockValues();

    /** Bytes of one block. */
    int blockBytes();

    /**
     * Decodes {@code blocks} consecutive blocks starting at byte {@code srcOffset} of {@code src}
     * (absolute index, little-endian) into {@code blocks × blockValues()} little-endian F32 values at
     * byte {@code dstOffset} of {@code dst} (absolute index). Reads and writes nothing else.
     */
    void decode(ByteBuffer src, int srcOffset, int blocks, ByteBuffer dst, int dstOffset);
}
