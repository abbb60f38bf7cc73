package io.graphlane.checkpoint.recipe;

import io.graphlane.core.tensor.DType;
import io.graphlane.core.tensor.Shape;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;

/**
 * Evaluates a validated recipe over its source bytes. Intermediate results live off the Java heap;
 * source bytes are read in place (a source, reshape or view at the root is one copy into the output).
 */
final class Evaluator {
    private Evaluator() {
    }

    /**
     * Evaluates {@code r}, taking source bytes from {@code in} in {@link Recipe#sources()} order, into
     * {@code dest} (exactly the spec's byte size, little-endian) or, if null, a new off-heap buffer.
     */
    static ByteBuffer eval(Recipe r, Iterator<ByteBuffer> in, ByteBuffer dest) {
        if (r instanceof Recipe.Source) {
            return into(dest, in.next());
        }
        if (r instanceof Recipe.Reshape reshape) {
            return into(dest, eval(reshape.input(), in, null));
        }
        if (r instanceof Recipe.View view) {
            return into(dest, eval(view.input(), in, null));
        }
        ByteBuffer out = dest != null ? dest : allocate(r.spec().byteSize());
        if (r instanceof Recipe.Select select) {
            ByteBuffer src = eval(select.input(), in, null);
            Shape shape = select.input().spec().shape();
            int[] pos = {0};
            select.selection().forEachBlock(shape, select.input().spec().dtype().byteSize(), (offset, length) -> {
                out.put(pos[0], src, (int) offset, (int) length);
                pos[0] += (int) length;
            });
        } else if (r instanceof Recipe.Concat concat) {
            joinAlong(concat.axis(), concat.parts(), in, out);
        } else if (r instanceof Recipe.Stack stack) {
            joinAlong(stack.axis(), stack.parts(), in, out);
        } else if (r instanceof Recipe.Transpose transpose) {
            transpose(transpose, eval(transpose.input(), in, null), out);
        } else if (r instanceof Recipe.Cast cast && cast.input() instanceof Recipe.Dequantize dequantize) {
            DType to = cast.spec().dtype();
            decodeRows(dequantize, in, (row, values, cols) -> cast(DType.F32, values, to,
                    out.slice(Math.toIntExact(row * cols * to.byteSize()), cols * to.byteSize()).order(ByteOrder.LITTLE_ENDIAN), cols));
        } else if (r instanceof Recipe.QuantizeQ8 quantize && quantize.input() instanceof Recipe.Dequantize dequantize) {
            int rowBytes = Math.toIntExact(quantize.spec().shape().dim(1));
            decodeRows(dequantize, in, (row, values, cols) -> BlockQ8.quantize(values, 1, cols,
                    out.slice(Math.toIntExact(row * rowBytes), rowBytes)));
        } else if (r instanceof Recipe.Offset offset) {
            ByteBuffer src = eval(offset.input(), in, null);
            int base = src.position();
            float delta = offset.delta();
            long count = offset.spec().shape().elementCount();
            for (int i = 0; i < count; i++) {
                out.putFloat(4 * i, src.getFloat(base + 4 * i) + delta);
            }
        } else if (r instanceof Recipe.Cast cast) {
            cast(cast.input().spec().dtype(), eval(cast.input(), in, null), cast.spec().dtype(), out,
                    cast.spec().shape().elementCount());
        } else if (r instanceof Recipe.QuantizeQ8 quantize) {
            Recipe input = quantize.input();
            ByteBuffer src = eval(input, in, null);
            long count = input.spec().shape().elementCount();
            if (input.spec().dtype() != DType.F32) {
                ByteBuffer widened = allocate(count * Float.BYTES);
                cast(input.spec().dtype(), src, DType.F32, widened, count);
                src = widened;
            }
            Shape shape = input.spec().shape();
            BlockQ8.quantize(src, (int) shape.dim(0), (int) shape.dim(1), out);
        } else if (r instanceof Recipe.Dequantize dequantize) {
            ByteBuffer src = eval(dequantize.input(), in, null);
            BlockFormat format = dequantize.format();
            long blocks = dequantize.input().spec().byteSize() / format.blockBytes();
            format.decode(src, src.position(), (int) blocks, out, 0);
        } else if (r instanceof Recipe.RepackQ8 repack) {
            Shape shape = repack.input().spec().shape();
            BlockQ8.repackHalfScaled(eval(repack.input(), in, null), (int) shape.dim(0), (int) (shape.dim(1) / Recipe.RepackQ8.BLOCK_BYTES), out);
        } else {
            throw new IllegalStateException("no evaluation for recipe step " + r);
        }
        return out;
    }

    /** Receives one decoded row: its index, its values (little-endian F32 from index 0) and its length. */
    private interface RowSink {
        void accept(long row, ByteBuffer values, int cols);
    }

    /**
     * Decodes {@code d}'s blocks one row (its last axis) at a time into a scratch row of F32 and hands each row to
     * {@code sink}, so a step that narrows or quantizes the decoded values never holds the whole tensor in F32.
     */
    private static void decodeRows(Recipe.Dequantize d, Iterator<ByteBuffer> in, RowSink sink) {
        ByteBuffer src = eval(d.input(), in, null);
        BlockFormat format = d.format();
        Shape shape = d.spec().shape();
        int cols = Math.toIntExact(shape.dim(shape.rank() - 1));
        if (cols == 0) {
            return;
        }
        long rows = shape.elementCount() / cols;
        int blocks = cols / format.blockValues();
        int rowBytes = blocks * format.blockBytes();
        ByteBuffer row = ByteBuffer.allocate(cols * Float.BYTES).order(ByteOrder.LITTLE_ENDIAN);
        for (long r = 0; r < rows; r++) {
            format.decode(src, Math.toIntExact(src.position() + r * rowBytes), blocks, row, 0);
            sink.accept(r, row, cols);
        }
    }

    private static ByteBuffer into(ByteBuffer dest, ByteBuffer value) {
        if (dest == null) {
            return value;
        }
        dest.put(0, value, value.position(), value.remaining());
        return dest;
    }

    static ByteBuffer allocate(long bytes) {
        return ByteBuffer.allocateDirect(Math.toIntExact(bytes)).order(ByteOrder.LITTLE_ENDIAN);
    }

    private static void joinAlong(int axis, List<Recipe> parts, Iterator<ByteBuffer> in, ByteBuffer out) {
        List<ByteBuffer> bufs = new ArrayList<>();
        long[] chunk = new long[parts.size()];
        Shape first = parts.get(0).spec().shape();
        long outer = 1;
        for (int d = 0; d < axis; d++) {
            outer *= first.dim(d);
        }
        for (int i = 0; i < parts.size(); i++) {
            Recipe p = parts.get(i);
            bufs.add(eval(p, in, null));
            chunk[i] = outer == 0 ? 0 : p.spec().byteSize() / outer;
        }
        if (outer == 0) {
            return;
        }
        int pos = 0;
        for (long o = 0; o < outer; o++) {
            for (int i = 0; i < bufs.size(); i++) {
                int len = (int) chunk[i];
                ByteBuffer b = bufs.get(i);
                out.put(pos, b, b.position() + (int) (o * chunk[i]), len);
                pos += len;
            }
        }
    }

    private static void transpose(Recipe.Transpose t, ByteBuffer src, ByteBuffer out) {
        Shape inShape = t.input().spec().shape();
        Shape outShape = t.spec().shape();
        int rank = outShape.rank();
        int esize = t.spec().dtype().byteSize();
        long count = outShape.elementCount();
        if (count == 0) {
            return;
        }
        long[] inStrides = Steps.strides(inShape);
        int[] perm = t.permutation();
        long[] srcStride = new long[rank];
        for (int a = 0; a < rank; a++) {
            srcStride[a] = inStrides[perm[a]] * esize;
        }
        if (rank == 0) {
            out.put(0, src, src.position(), esize);
            return;
        }
        long[] idx = new long[rank];
        long inner = outShape.dim(rank - 1);
        long innerStride = srcStride[rank - 1];
        int base = src.position();
        int dst = 0;
        long srcOffset = 0;
        for (long done = 0; done < count; done += inner) {
            if (innerStride == esize) {
                int len = (int) (inner * esize);
                out.put(dst, src, base + (int) srcOffset, len);
                dst += len;
            } else {
                long s = srcOffset;
                for (long k = 0; k < inner; k++) {
                    out.put(dst, src, base + (int) s, esize);
                    dst += esize;
                    s += innerStride;
                }
            }
            for (int a = rank - 2; a >= 0; a--) {
                idx[a]++;
                srcOffset += srcStride[a];
                if (idx[a] < outShape.dim(a)) {
                    break;
                }
                srcOffset -= idx[a] * srcStride[a];
                idx[a] = 0;
            }
        }
    }

    private static void cast(DType from, ByteBuffer src, DType to, ByteBuffer out, long count) {
        int base = src.position();
        int fs = from.byteSize();
        int ts = to.byteSize();
        if (from == to) {
            out.put(0, src, base, (int) (count * fs));
            return;
        }
        if (to == DType.F32 && (from == DType.BF16 || from == DType.F16)) {
            boolean bf = from == DType.BF16;
            for (int i = 0; i < count; i++) {
                short h = src.getShort(base + 2 * i);
                out.putFloat(4 * i, bf ? HalfPrecision.bf16ToF32(h) : HalfPrecision.f16ToF32(h));
            }
            return;
        }
        if (from == DType.F32 && (to == DType.BF16 || to == DType.F16)) {
            boolean bf = to == DType.BF16;
            for (int i = 0; i < count; i++) {
                float v = src.getFloat(base + 4 * i);
                out.putShort(2 * i, bf ? HalfPrecision.f32ToBf16(v) : HalfPrecision.f32ToF16(v));
            }
            return;
        }
        for (int i = 0; i < count; i++) {
            double v = read(src, base + i * fs, from);
            int at = i * ts;
            switch (to) {
                case F32 -> out.putFloat(at, (float) v);
                case F64 -> out.putDouble(at, v);
                case F16 -> out.putShort(at, HalfPrecision.f32ToF16((float) v));
                case BF16 -> out.putShort(at, HalfPrecision.f32ToBf16((float) v));
                default -> throw new IllegalStateException("cast to " + to + " is refused when the recipe is built");
            }
        }
    }

    private static double read(ByteBuffer b, int at, DType dtype) {
        return switch (dtype) {
            case F64 -> b.getDouble(at);
            case F32 -> b.getFloat(at);
            case F16 -> HalfPrecision.f16ToF32(b.getShort(at));
            case BF16 -> HalfPrecision.bf16ToF32(b.getShort(at));
            case I64 -> b.getLong(at);
            case I32 -> b.getInt(at);
            case I16 -> b.getShort(at);
            case I8 -> b.get(at);
            case U8 -> b.get(at) & 0xFF;
            case BOOL -> b.get(at) != 0 ? 1 : 0;
        };
    }
}
