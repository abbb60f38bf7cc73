package io.graphlane.backend.cpu.nn;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Objects;

/**
 * The bytes behind a CPU weight tensor, and a tensor of the same kind over other bytes: what a copy between memory
 * tiers needs to move a weight without changing what it means (an F32 tensor's floats, a packed matrix's 16-bit or
 * 8-bit blocks).
 */
public final class CpuTensorBytes {
    private CpuTensorBytes() {
    }

    /** {@code tensor}'s storage as bytes, position 0 (a view, valid while the tensor is). */
    public static ByteBuffer of(CpuTensor tensor) {
        PackedMatrix packed = tensor.packed();
        ByteBuffer view = packed != null ? packed.bytes() : tensor.bytes();
        return view.duplicate().position(0);
    }

    /** A tensor of {@code like}'s shape and kind over {@code bytes} (as many as {@link #of} gives for {@code like}), which the caller keeps valid. */
    public static CpuTensor sameKind(CpuTensor like, ByteBuffer bytes) {
        Objects.requireNonNull(bytes, "bytes");
        PackedMatrix packed = like.packed();
        if (packed != null) {
            return CpuTensor.wrapPacked(PackedMatrix.of(packed.encoding(), bytes.duplicate().order(ByteOrder.LITTLE_ENDIAN),
                    like.rows(), like.cols()));
        }
        return CpuTensor.wrap(bytes.duplicate().order(ByteOrder.nativeOrder()).asFloatBuffer(), like.rows(), like.cols());
    }
}
