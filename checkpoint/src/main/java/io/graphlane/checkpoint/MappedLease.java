package io.graphlane.checkpoint;

import io.graphlane.core.param.EncodedLease;
import io.graphlane.core.tensor.TensorSpec;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * A lease on one tensor selection of a pinned shard. A contiguous selection is a read-only view of
 * the mapped file (zero copy); a strided one is gathered, on first use of {@link #bytes()}, into an
 * off-heap buffer from a mapping of only the bytes between its first and last block.
 */
final class MappedLease implements EncodedLease {
    private final CheckpointSource owner;
    private final MappingCache.Shard shard;
    private final TensorLocation location;
    private final Selection selection;
    private final TensorSpec spec;
    private final String name;
    private final AtomicBoolean released = new AtomicBoolean();
    private ByteBuffer bytes;

    MappedLease(CheckpointSource owner, MappingCache.Shard shard, TensorLocation location, Selection selection,
                TensorSpec spec, ByteBuffer contiguous) {
        this.owner = owner;
        this.shard = shard;
        this.location = location;
        this.selection = selection;
        this.spec = spec;
        this.name = location.name() + selection;
        this.bytes = contiguous;
    }

    @Override
    public String name() {
        return name;
    }

    @Override
    public TensorSpec spec() {
        return spec;
    }

    /** The shard this lease pins, for ledgers. */
    String shardName() {
        return location.shardName();
    }

    @Override
    public ByteBuffer bytes() {
        ByteBuffer view;
        synchronized (this) {
            if (released.get()) {
                throw new IllegalStateException("lease '" + name + "' on shard " + location.shardName()
                        + " was already released; its bytes are no longer readable");
            }
            if (bytes == null) {
                bytes = gather();
            }
            view = bytes;
        }
        return view.duplicate().order(ByteOrder.LITTLE_ENDIAN);
    }

    private ByteBuffer gather() {
        int elementSize = location.spec().dtype().byteSize();
        long base = location.fileOffset();
        long size = spec.byteSize();
        ByteBuffer out = ByteBuffer.allocateDirect((int) size);
        long[] cover = selection.coveringBytes(location.spec().shape(), elementSize);
        if (cover[1] - cover[0] <= Integer.MAX_VALUE) {
            ByteBuffer mapped = shard.channelMap(owner.cache(), base + cover[0], cover[1] - cover[0]);
            selection.forEachBlock(location.spec().shape(), elementSize, (offset, length) -> {
                ByteBuffer block = mapped.duplicate();
                block.position((int) (offset - cover[0])).limit((int) (offset - cover[0] + length));
                out.put(block);
            });
        } else {
            selection.forEachBlock(location.spec().shape(), elementSize, (offset, length) ->
                    out.put(shard.channelMap(owner.cache(), base + offset, length)));
        }
        out.flip();
        return out.asReadOnlyBuffer();
    }

    @Override
    public boolean isReleased() {
        return released.get();
    }

    @Override
    public void release() {
        synchronized (this) {
            if (!released.compareAndSet(false, true)) {
                throw new IllegalStateException("lease '" + name + "' on shard " + location.shardName()
                        + " was released twice");
            }
            bytes = null;
        }
        owner.released(this, shard);
    }

    @Override
    public String toString() {
        return "lease " + name + " " + spec + " on " + location.shardName() + (released.get() ? " (released)" : "");
    }
}
