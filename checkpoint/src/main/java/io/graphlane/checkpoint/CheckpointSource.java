package io.graphlane.checkpoint;

import io.graphlane.checkpoint.recipe.Recipe;
import io.graphlane.core.param.EncodedLease;
import io.graphlane.core.tensor.Shape;
import io.graphlane.core.tensor.TensorSpec;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Function;

/**
 * Hands out {@link EncodedLease}s on tensor selections of a validated checkpoint. A lease pins
 * its shard in a bounded mapping cache until it is released (exactly once); a contiguous
 * selection is a zero-copy view of the memory-mapped file, and a lease never maps bytes outside
 * the span its selection needs. Thread-safe: leases may be taken and released on any thread.
 */
public final class CheckpointSource implements AutoCloseable {
    /** The default bound on open shard files (see {@code graphlane.checkpoint.max-open-shards}). */
    public static final int DEFAULT_MAX_OPEN_SHARDS = 16;

    /** The largest selection one lease can view: a Java 17 buffer holds below 2 GiB. */
    public static final long MAX_LEASE_BYTES = Integer.MAX_VALUE - 8;

    private final CheckpointCatalog catalog;
    private final MappingCache cache;
    private final Set<MappedLease> open = ConcurrentHashMap.newKeySet();
    /** Weights this source derives from its tensors (a GGUF file's Hugging Face weights), by name; set once by {@link #of(CheckpointCatalog, int, Function)}. */
    private Map<String, Recipe> derived = Map.of();

    private CheckpointSource(CheckpointCatalog catalog, int maxOpenShards) {
        this.catalog = Objects.requireNonNull(catalog, "catalog");
        this.cache = new MappingCache(maxOpenShards);
    }

    /**
     * Opens the weights of model directory {@code dir}, validating every header and the index.
     *
     * @throws CheckpointException naming the file and problem if the checkpoint is refused
     */
    public static CheckpointSource open(Path dir) {
        return new CheckpointSource(CheckpointCatalog.open(dir), DEFAULT_MAX_OPEN_SHARDS);
    }

    /** As {@link #open(Path)}, with at most {@code maxOpenShards} shard files open at once. */
    public static CheckpointSource open(Path dir, int maxOpenShards) {
        return new CheckpointSource(CheckpointCatalog.open(dir), maxOpenShards);
    }

    /** A source over an already validated catalogue, with at most {@code maxOpenShards} shard files open at once. */
    public static CheckpointSource of(CheckpointCatalog catalog, int maxOpenShards) {
        return new CheckpointSource(catalog, maxOpenShards);
    }

    /**
     * A source over an already validated catalogue that also offers derived weights: {@code derivations}, given this
     * source, names each derived weight with its recipe over this source's tensors (validated, nothing read). A loader
     * asks {@link #recipe} for a weight by name and gets the derived recipe where there is one, else the tensor itself.
     */
    public static CheckpointSource of(CheckpointCatalog catalog, int maxOpenShards,
                                      Function<CheckpointSource, Map<String, ? extends Recipe>> derivations) {
        CheckpointSource source = new CheckpointSource(catalog, maxOpenShards);
        try {
            source.derived = Map.copyOf(derivations.apply(source));
        } catch (RuntimeException e) {
            source.close();
            throw e;
        }
        return source;
    }

    /** True if {@code name} is a tensor of the catalogue or a weight this source derives. */
    public boolean has(String name) {
        return derived.containsKey(name) || catalog.contains(name);
    }

    /** True if {@code name} is a weight this source derives (read only through its {@link #recipe}, never leased by name). */
    public boolean isDerived(String name) {
        return derived.containsKey(name);
    }

    /**
     * The recipe of weight {@code name}: the derived one where this source derives it, else the whole tensor.
     *
     * @throws io.graphlane.checkpoint.recipe.RecipeException naming the tensor if there is neither
     */
    public Recipe recipe(String name) {
        Recipe r = derived.get(name);
        return r != null ? r : Recipe.source(this, name);
    }

    /** The validated catalogue. */
    public CheckpointCatalog catalog() {
        return catalog;
    }

    /**
     * The dtype and shape a lease on {@code selection} of tensor {@code name} would have; reads nothing.
     *
     * @throws CheckpointException naming the tensor and the selection if either is not valid
     */
    public TensorSpec spec(String name, Selection selection) {
        TensorLocation loc = catalog.tensor(name);
        return new TensorSpec(loc.spec().dtype(), selectedShape(loc, selection));
    }

    /** A lease on the whole tensor {@code name}. */
    public EncodedLease lease(String name) {
        return lease(name, Selection.all());
    }

    /**
     * A lease on {@code selection} of tensor {@code name}; the caller releases it exactly once.
     *
     * @throws CheckpointException naming the tensor if it is unknown, the selection invalid or over 2 GiB
     * @throws MappingCacheExhaustedException listing the pinned shards if no shard slot is free
     */
    public EncodedLease lease(String name, Selection selection) {
        Objects.requireNonNull(selection, "selection");
        TensorLocation loc = catalog.tensor(name);
        Shape shape = selectedShape(loc, selection);
        TensorSpec spec = new TensorSpec(loc.spec().dtype(), shape);
        if (spec.byteSize() > MAX_LEASE_BYTES) {
            throw new CheckpointException(loc.shardPath() + ": tensor '" + name + "'" + selection + " is "
                    + spec.byteSize() + " bytes, over the " + MAX_LEASE_BYTES
                    + " bytes one lease can view; lease a range of it instead");
        }
        MappingCache.Shard shard = cache.pin(loc.shardPath());
        try {
            ByteBuffer contiguous = null;
            long[] first = contiguousBlock(loc, selection);
            if (first != null) {
                contiguous = first[1] == 0 ? ByteBuffer.allocateDirect(0).asReadOnlyBuffer()
                        : cache.map(shard, loc.fileOffset() + first[0], first[1]);
            }
            MappedLease lease = new MappedLease(this, shard, loc, selection, spec, contiguous);
            open.add(lease);
            return lease;
        } catch (RuntimeException e) {
            cache.unpin(shard);
            throw e;
        }
    }

    private static Shape selectedShape(TensorLocation loc, Selection selection) {
        try {
            return selection.apply(loc.spec().shape());
        } catch (IllegalArgumentException e) {
            throw new CheckpointException(loc.shardPath() + ": tensor '" + loc.name() + "' " + loc.spec()
                    + ": selection " + selection + " refused: " + e.getMessage(), e);
        }
    }

    /** The single (offset, length) block of a contiguous selection, or null if it has several blocks. */
    private static long[] contiguousBlock(TensorLocation loc, Selection selection) {
        long[][] found = new long[1][];
        int[] count = {0};
        selection.forEachBlock(loc.spec().shape(), loc.spec().dtype().byteSize(), (offset, length) -> {
            count[0]++;
            found[0] = new long[] {offset, length};
        });
        if (count[0] == 0) {
            return new long[] {0, 0};
        }
        return count[0] == 1 ? found[0] : null;
    }

    void released(MappedLease lease, MappingCache.Shard shard) {
        open.remove(lease);
        cache.unpin(shard);
    }

    MappingCache cache() {
        return cache;
    }

    /** The names of the leases not yet released (for ledgers and leak checks). */
    public List<String> openLeases() {
        List<String> names = new ArrayList<>();
        for (MappedLease l : open) {
            names.add(l.name());
        }
        return names;
    }

    /** The number of leases not yet released. */
    public int openLeaseCount() {
        return open.size();
    }

    /** The shard files pinned by open leases now. */
    public List<Path> pinnedShards() {
        return cache.pinned();
    }

    /** The number of shard files open now (never above the bound). */
    public int openShardCount() {
        return cache.openCount();
    }

    /** Total bytes mapped by leases so far: a measure of what leases touched, for tests and benchmarks. */
    public long mappedBytes() {
        return cache.mappedBytes();
    }

    /** Refuses new leases and closes shard files as soon as no open lease pins them; open leases stay readable. */
    @Override
    public void close() {
        cache.close();
    }
}
