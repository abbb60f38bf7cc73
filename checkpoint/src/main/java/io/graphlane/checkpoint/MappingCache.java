package io.graphlane.checkpoint;

import java.io.IOException;
import java.nio.MappedByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A bounded set of open shard files from which leases map their bytes. A shard is pinned while
 * any lease on it is open and is then never evicted; when the cache is full, the least recently
 * used unpinned shard is closed to make room, and when every open shard is pinned acquisition
 * fails naming them. Regions are mapped per lease (each below 2 GiB), so files of any size work.
 * Thread-safe.
 */
final class MappingCache {
    private static final Logger LOG = LoggerFactory.getLogger(MappingCache.class);

    private final int capacity;
    private final LinkedHashMap<Path, Shard> open = new LinkedHashMap<>(16, 0.75f, true);
    private final AtomicLong mappedBytes = new AtomicLong();
    private boolean closed;

    /** One open shard file and its pin count. */
    static final class Shard {
        private final Path path;
        private final FileChannel channel;
        private int pins;

        private Shard(Path path, FileChannel channel) {
            this.path = path;
            this.channel = channel;
        }

        Path path() {
            return path;
        }

        /** Maps a region of this shard through {@code cache}, which counts the bytes mapped. */
        java.nio.MappedByteBuffer channelMap(MappingCache cache, long position, long length) {
            return cache.map(this, position, length);
        }
    }

    MappingCache(int capacity) {
        if (capacity < 1) {
            throw new IllegalArgumentException("max-open-shards must be at least 1, found " + capacity);
        }
        this.capacity = capacity;
    }

    /** Opens (or reuses) {@code path} and pins it; the caller must {@link #unpin} it exactly once. */
    synchronized Shard pin(Path path) {
        if (closed) {
            throw new CheckpointException(path + ": the checkpoint source is closed; no new leases");
        }
        Shard shard = open.get(path);
        if (shard == null) {
            if (open.size() >= capacity && !evictOne()) {
                List<String> pinned = new ArrayList<>();
                for (Shard s : open.values()) {
                    pinned.add(s.path.getFileName() + " (" + s.pins + (s.pins == 1 ? " lease)" : " leases)"));
                }
                throw new MappingCacheExhaustedException(path.toString(), capacity, pinned);
            }
            try {
                shard = new Shard(path, FileChannel.open(path, StandardOpenOption.READ));
            } catch (IOException e) {
                throw new CheckpointException(path + ": cannot open the shard: " + e, e);
            }
            open.put(path, shard);
        }
        shard.pins++;
        return shard;
    }

    private boolean evictOne() {
        for (Iterator<Map.Entry<Path, Shard>> it = open.entrySet().iterator(); it.hasNext(); ) {
            Shard s = it.next().getValue();
            if (s.pins == 0) {
                it.remove();
                closeQuietly(s);
                return true;
            }
        }
        return false;
    }

    /** Drops one pin taken by {@link #pin}. */
    synchronized void unpin(Shard shard) {
        if (shard.pins <= 0) {
            throw new IllegalStateException("shard " + shard.path + " is not pinned");
        }
        shard.pins--;
        if (closed && shard.pins == 0) {
            open.remove(shard.path);
            closeQuietly(shard);
        }
    }

    /** Maps {@code length} (below 2 GiB) bytes of a pinned shard read-only from {@code position}. */
    MappedByteBuffer map(Shard shard, long position, long length) {
        if (length > Integer.MAX_VALUE) {
            throw new IllegalArgumentException("cannot map " + length + " bytes at once from " + shard.path);
        }
        try {
            MappedByteBuffer buffer = shard.channel.map(FileChannel.MapMode.READ_ONLY, position, length);
            mappedBytes.addAndGet(length);
            return buffer;
        } catch (IOException e) {
            throw new CheckpointException(shard.path + ": cannot map bytes [" + position + ", " + (position + length)
                    + "): " + e, e);
        }
    }

    /** Total bytes mapped so far (a region mapped twice counts twice). */
    long mappedBytes() {
        return mappedBytes.get();
    }

    /** The number of shard files open now. */
    synchronized int openCount() {
        return open.size();
    }

    /** The shards pinned now. */
    synchronized List<Path> pinned() {
        List<Path> pinned = new ArrayList<>();
        for (Shard s : open.values()) {
            if (s.pins > 0) {
                pinned.add(s.path);
            }
        }
        return pinned;
    }

    /** Closes every unpinned shard now and each pinned one when its last lease is released. */
    synchronized void close() {
        closed = true;
        for (Iterator<Map.Entry<Path, Shard>> it = open.entrySet().iterator(); it.hasNext(); ) {
            Shard s = it.next().getValue();
            if (s.pins == 0) {
                it.remove();
                closeQuietly(s);
            }
        }
    }

    private static void closeQuietly(Shard s) {
        try {
            s.channel.close();
        } catch (IOException e) {
            LOG.warn("closing shard {} failed: {}", s.path, e.toString());
        }
    }
}
