package io.graphlane.cluster.pipeline;

import io.graphlane.backend.cpu.collective.CollectiveSettings;
import io.graphlane.backend.cpu.collective.CpuCollectiveMember;
import io.graphlane.backend.cpu.nn.CpuNeuralOps;
import io.graphlane.backend.cpu.nn.CpuTensor;
import io.graphlane.cluster.collective.ClusterCollectiveTransport;
import io.graphlane.cluster.collective.ClusterCollectiveException;
import io.graphlane.inference.tensorparallel.CollectiveShard;
import io.graphlane.inference.tensorparallel.CpuShardComm;
import io.graphlane.inference.tensorparallel.LlamaShard;
import io.graphlane.inference.tensorparallel.ShardWeights;
import io.graphlane.inference.tensorparallel.TensorParallelism;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.function.Consumer;
import java.util.function.Function;

/**
 * The shard groups of one tensor-parallel shard on its node: the shard's weights, loaded once, and every
 * {@link ShardGroup} formed over them, one per collective group the shard has joined. A stage forms (at startup) and
 * re-forms (after a shard's node was replaced) by joining a fresh group: {@link #form} joins it and builds a fresh
 * {@link CollectiveShard} (empty KV caches) over the same weights and the group's member.
 *
 * <p>Owns the weights (bound through the materialization supervisor, released through their loader) and each shard
 * group's shard and transport. Guarantees: each shard group is retired (its KV
 * caches freed, its transport closed) exactly once, by {@link #retire} or by {@link #closeAll}; the weights are
 * released exactly once, by {@link #closeAll}, after every shard group; a group joined after {@link #closeAll} is
 * retired at once and its {@link #form} fails. Refuses nothing else; thread-safe. Whoever calls {@link #retire} must
 * make sure no work of that shard group runs any more (its hosts submit the retirement on the shard's compute lane once
 * every work of the group has ended on both lanes).
 */
final class NodeShardGroups implements ShardGroups {
    private final TensorParallelism tp;
    private final int rank;
    private final ShardWeights<CpuTensor> weights;
    private final Consumer<ShardWeights<CpuTensor>> releaseWeights;
    private final CollectiveSettings settings;
    private final Function<String, CompletionStage<ClusterCollectiveTransport>> join;
    private final Set<ShardGroup> live = new LinkedHashSet<>();
    private boolean closed;

    /**
     * Shard groups of rank {@code rank} over {@code weights}, released by {@code releaseWeights} (their loader's
     * release); {@code join} joins this rank to the named group ({@code ClusterCollectives.join} on the node).
     */
    NodeShardGroups(TensorParallelism tp, int rank, ShardWeights<CpuTensor> weights, Consumer<ShardWeights<CpuTensor>> releaseWeights,
                    CollectiveSettings settings,
                     Function<String, CompletionStage<ClusterCollectiveTransport>> join) {
        this.tp = Objects.requireNonNull(tp, "tp");
        this.rank = rank;
        this.weights = Objects.requireNonNull(weights, "weights");
        this.releaseWeights = Objects.requireNonNull(releaseWeights, "releaseWeights");
        this.settings = Objects.requireNonNull(settings, "settings");
        this.join = Objects.requireNonNull(join, "join");
    }

    @Override
    public int rank() {
        return rank;
    }

    /**
     * Joins {@code group} as this shard's rank and builds this shard's {@link ShardGroup} in it; completes once every rank of the
     * group has joined, or fails (join timeout, a rank claimed twice, or these shard groups closed). Never blocks.
     */
    @Override
    public CompletionStage<ShardGroup> form(String group) {
        synchronized (this) {
            if (closed) {
                return CompletableFuture.failedFuture(closedFailure(group));
            }
        }
        CompletionStage<ClusterCollectiveTransport> joined;
        try {
            joined = join.apply(group);
        } catch (RuntimeException e) {
            return CompletableFuture.failedFuture(e);
        }
        return joined.thenCompose(transport -> {
            CpuCollectiveMember member = CpuCollectiveMember.over(group, rank, transport, settings);
            ShardGroup shardGroup = new ShardGroup(group, new CollectiveShard<>(new LlamaShard<>(tp, weights, new CpuNeuralOps()),
                    new CpuShardComm(member)),
                    transport);
            synchronized (this) {
                if (!closed) {
                    live.add(shardGroup);
                    return CompletableFuture.completedFuture(shardGroup);
                }
            }
            shardGroup.shard().close();
            return transport.closeAsync().thenCompose(v -> CompletableFuture.<ShardGroup>failedFuture(closedFailure(group)));
        });
    }

    /**
     * Retires {@code shardGroup}: frees its KV caches and closes its transport (telling its live peers it left); a
     * shard group already retired is left alone. Completes once its transport has closed; never fails.
     */
    @Override
    public CompletionStage<Void> retire(ShardGroup shardGroup) {
        synchronized (this) {
            if (!live.remove(shardGroup)) {
                return CompletableFuture.completedFuture(null);
            }
        }
        shardGroup.shard().close();
        return shardGroup.transport().closeAsync();
    }

    /**
     * Retires every shard group still live, then releases the weights; later {@link #form}s fail. Call it once nothing
     * runs on the shard's lanes any more. Completes when the transports have closed; a second call does nothing.
     */
    CompletionStage<Void> closeAll() {
        List<ShardGroup> left;
        synchronized (this) {
            if (closed) {
                return CompletableFuture.completedFuture(null);
            }
            closed = true;
            left = new ArrayList<>(live);
            live.clear();
        }
        List<CompletableFuture<Void>> closing = new ArrayList<>();
        for (ShardGroup g : left) {
            g.shard().close();
            closing.add(g.transport().closeAsync().toCompletableFuture());
        }
        releaseWeights.accept(weights);
        return CompletableFuture.allOf(closing.toArray(CompletableFuture[]::new));
    }

    private ClusterCollectiveException closedFailure(String group) {
        return new ClusterCollectiveException("shard " + rank + " of stage " + weights.stage().index() + " is stopping; it does not join group " + group);
    }
}
