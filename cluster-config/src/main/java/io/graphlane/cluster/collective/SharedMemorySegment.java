package io.graphlane.cluster.collective;

import java.io.IOException;
import java.lang.reflect.Field;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.MappedByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.SecureRandom;
import java.util.HexFormat;
import java.util.concurrent.atomic.AtomicBoolean;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A file both ranks of a pair map, holding two {@link SharedRing}s, one per direction: the memory their payload
 * travels through when both ranks run on one host ({@link SharedMemoryChannel}). The lower rank creates it under
 * {@link #directory()} (readable and writable by its owner only, its pages allocated up front so a full file system
 * is an error here and never a fault later), writes a magic number and a random token into its first page, and offers
 * its path and token over the pair's socket; the higher rank maps it only if it finds that very token, so a path that
 * names another file (another host, another join) is refused. The creator deletes the file once the offer is
 * answered; the mappings stay until {@link #unmap}.
 *
 * <p>Layout: a header page (magic, token), then the ring from the lower rank to the higher one (its control page, its
 * data), then the ring back.
 */
final class SharedMemorySegment {
    private static final Logger LOG = LoggerFactory.getLogger(SharedMemorySegment.class);
    private static final long MAGIC = 0x474C5348_4D454D31L;
    private static final int HEADER_BYTES = 4096;
    /** The smallest and largest ring a segment may hold (each direction). */
    static final int MIN_RING = 64 * 1024;
    static final int MAX_RING = 1 << 30;
    private static final Field UNSAFE = unsafeField();

    private final Path path;
    private final long token;
    private final MappedByteBuffer region;
    private final int ringBytes;
    private final AtomicBoolean unmapped = new AtomicBoolean();

    private SharedMemorySegment(Path path, long token, MappedByteBuffer region, int ringBytes) {
        this.path = path;
        this.token = token;
        this.region = region;
        this.ringBytes = ringBytes;
    }

    /** Where segments are created: {@code /dev/shm} where it is a writable directory (memory), else the temporary directory. */
    static Path directory() {
        Path shm = Path.of("/dev/shm");
        if (Files.isDirectory(shm) && Files.isWritable(shm)) {
            return shm;
        }
        return Path.of(System.getProperty("java.io.tmpdir"));
    }

    /** The bytes a segment with rings of {@code ringBytes} takes. */
    static long size(int ringBytes) {
        return HEADER_BYTES + 2 * SharedRing.footprint(ringBytes);
    }

    /** The ring capacity for a socket buffer of {@code bytes}: the power of two at or above it, within the bounds. */
    static int ringFor(long bytes) {
        long clamped = Math.max(MIN_RING, Math.min(MAX_RING, bytes));
        return (int) Long.highestOneBit(clamped - 1) << 1;
    }

    /**
     * Creates, fills and maps a new segment with rings of {@code ringBytes} in {@code dir}.
     *
     * @throws IOException if the file cannot be created or its pages cannot be allocated (the file is deleted then)
     */
    static SharedMemorySegment create(Path dir, int ringBytes) throws IOException {
        SecureRandom random = new SecureRandom();
        long token = random.nextLong();
        byte[] name = new byte[12];
        random.nextBytes(name);
        Path path = dir.resolve("graphlane-collective-" + HexFormat.of().formatHex(name));
        long size = size(ringBytes);
        try {
            try {
                Files.createFile(path, PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")));
            } catch (UnsupportedOperationException e) {
                Files.createFile(path);
            }
            try (FileChannel ch = FileChannel.open(path, StandardOpenOption.READ, StandardOpenOption.WRITE)) {
                // Writing every page allocates it now: on a full tmpfs this fails here, where mapping would fault later.
                ByteBuffer zeros = ByteBuffer.allocateDirect(1 << 20);
                for (long at = 0; at < size; ) {
                    zeros.clear().limit((int) Math.min(zeros.capacity(), size - at));
                    at += ch.write(zeros, at);
                }
                MappedByteBuffer region = ch.map(FileChannel.MapMode.READ_WRITE, 0, size);
                region.order(ByteOrder.nativeOrder());
                region.putLong(8, token);
                region.putLong(0, MAGIC);
                return new SharedMemorySegment(path, token, region, ringBytes);
            }
        } catch (FileAlreadyExistsException e) {
            throw new IOException("a shared-memory segment named " + path + " exists already", e);
        } catch (IOException | RuntimeException e) {
            Files.deleteIfExists(path);
            throw e;
        }
    }

    /**
     * Maps the segment another rank created at {@code path}, if it is one with {@code token} and rings of
     * {@code ringBytes}; null (logged at debug, with why) if not.
     */
    static SharedMemorySegment open(Path path, long token, int ringBytes) {
        if (ringBytes < MIN_RING || ringBytes > MAX_RING || Integer.bitCount(ringBytes) != 1) {
            LOG.debug("shared-memory offer refused: a ring of {} bytes", ringBytes);
            return null;
        }
        long size = size(ringBytes);
        try (FileChannel ch = FileChannel.open(path, StandardOpenOption.READ, StandardOpenOption.WRITE)) {
            if (ch.size() != size) {
                LOG.debug("shared-memory offer refused: {} holds {} bytes, expected {}", path, ch.size(), size);
                return null;
            }
            MappedByteBuffer region = ch.map(FileChannel.MapMode.READ_WRITE, 0, size);
            region.order(ByteOrder.nativeOrder());
            if (region.getLong(0) != MAGIC || region.getLong(8) != token) {
                unmap(region);
                LOG.debug("shared-memory offer refused: {} is not the segment offered", path);
                return null;
            }
            return new SharedMemorySegment(path, token, region, ringBytes);
        } catch (IOException | RuntimeException e) {
            LOG.debug("shared-memory offer refused: cannot map {}: {}", path, e.toString());
            return null;
        }
    }

    Path path() {
        return path;
    }

    long token() {
        return token;
    }

    int ringBytes() {
        return ringBytes;
    }

    /** The ring from the lower rank of the pair to the higher one ({@code upward}) or back. */
    SharedRing ring(boolean upward) {
        long at = HEADER_BYTES + (upward ? 0 : SharedRing.footprint(ringBytes));
        return new SharedRing(region, (int) at, ringBytes);
    }

    /** Deletes the file (the mappings stay); quiet if it is gone already. */
    void delete() {
        try {
            Files.deleteIfExists(path);
        } catch (IOException e) {
            LOG.warn("could not delete the shared-memory segment {}: {}", path, e.toString());
        }
    }

    /**
     * Unmaps the segment at once, so its memory goes back without waiting for a garbage collection. Only once nothing
     * touches its rings any more (their reader and writer threads have ended): a later access would fault.
     */
    void unmap() {
        if (unmapped.compareAndSet(false, true)) {
            unmap(region);
        }
    }

    private static void unmap(MappedByteBuffer region) {
        if (UNSAFE == null) {
            return;
        }
        try {
            ((sun.misc.Unsafe) UNSAFE.get(null)).invokeCleaner(region);
        } catch (IllegalAccessException | RuntimeException e) {
            LOG.debug("could not unmap a shared-memory segment (it goes with the next garbage collection): {}", e.toString());
        }
    }

    private static Field unsafeField() {
        try {
            Field f = sun.misc.Unsafe.class.getDeclaredField("theUnsafe");
            f.setAccessible(true);
            return f;
        } catch (ReflectiveOperationException | RuntimeException e) {
            return null;
        }
    }
}
