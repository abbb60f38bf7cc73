package io.graphlane.backend.cpu.param;

import java.nio.ByteBuffer;
import java.nio.MappedByteBuffer;
import java.util.stream.IntStream;

/**
 * Brings the pages of memory-mapped weights into memory when a model loads, so that its first token does not wait for
 * them: {@link MappedByteBuffer#load} (which advises the kernel with {@code MADV_WILLNEED} and then touches every
 * page) over slices of the mapping, the slices on the common fork-join pool's threads at once. A buffer that is not
 * mapped from a file is left as it is.
 */
public final class MappedPages {
    /** Bytes of one slice loaded by one thread: large enough that the kernel reads ahead, small enough to spread. */
    static final int SLICE_BYTES = 16 << 20;

    private MappedPages() {
    }

    /** Loads every page of {@code buffer}'s remaining bytes if it is mapped from a file; returns the bytes loaded. */
    public static long load(ByteBuffer buffer) {
        if (!(buffer instanceof MappedByteBuffer) || !buffer.isDirect()) {
            return 0;
        }
        int bytes = buffer.remaining();
        int slices = (bytes + SLICE_BYTES - 1) / SLICE_BYTES;
        ByteBuffer whole = buffer.slice();
        IntStream stream = IntStream.range(0, slices);
        (slices > 1 ? stream.parallel() : stream).forEach(i -> {
            int from = i * SLICE_BYTES;
            ((MappedByteBuffer) whole.slice(from, Math.min(SLICE_BYTES, bytes - from))).load();
        });
        return bytes;
    }
}
