package io.graphlane.inference.moe;

import io.graphlane.backend.cpu.CpuBackend;
import io.graphlane.backend.cpu.CpuExecutor;
import io.graphlane.backend.cpu.collective.CollectiveSettings;
import io.graphlane.backend.cpu.collective.CpuCollectiveGroup;
import io.graphlane.backend.cpu.collective.CpuCollectives;
import io.graphlane.backend.cpu.nn.CpuNeuralOps;
import io.graphlane.backend.cpu.nn.CpuTensor;
import io.graphlane.core.GraphlaneException;
import io.graphlane.core.backend.CollectiveBackend.Result;
import io.graphlane.core.completion.Completion;
import io.graphlane.core.completion.Outcome;
import io.graphlane.inference.llama.ExpertRankFailedException;
import io.graphlane.inference.llama.ExpertWeights;
import io.graphlane.inference.llama.LlamaConfig;
import io.graphlane.inference.llama.MoeBlock;
import io.graphlane.inference.llama.MoeRouting;
import io.graphlane.inference.llama.MoeWeights;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Expert parallelism in one process over {@code size} CPU expert lanes: rank {@code r} owns the experts
 * {@code [r·n/size, (r+1)·n/size)} of every sparse layer and runs only those. A sparse block's step is, per rank, a chain
 * of lane works in this order (a lane runs its works in submission order; across lanes the collectives order them):
 * <ol>
 *   <li>an all-to-all of the split sizes: each rank sends every rank one row holding, per expert of the receiver, how
 *       many rows it sends for it (so the variable sizes are known before the payload moves);</li>
 *   <li>the payload all-to-all: the token rows, grouped per destination rank and, inside, per expert (the collective's
 *       descriptor consensus carries the per-rank counts);</li>
 *   <li>the experts as a work on the rank's lane: each owned expert runs one GEMM per projection over all its rows, from
 *       every source;</li>
 *   <li>the combine all-to-all: every rank sends each source back its rows' expert outputs, in the order received.</li>
 * </ol>
 * The rows of a step start on rank 0 (the stage's attention runs once, here), which sends the other ranks only the rows
 * their experts were chosen for and sums what comes back weighted by the router, in expert order. A rank whose expert
 * work fails fails the step with an {@link ExpertRankFailedException} naming it, its experts and the rows routed to it
 * (the decoder layers name the requests), so that only those requests need to fail ({@link ExpertFaultIsolation}).
 */
public final class ExpertParallelExperts implements MoeBlock.ExpertRunner<CpuTensor>, AutoCloseable {
    private final LlamaConfig config;
    private final int size;
    private final CpuBackend backend;
    private final CpuCollectives collectives;
    private final CpuCollectiveGroup group;
    private final List<CpuExecutor> lanes;
    /** The coordinator's ops (the stage's thread), and one per expert lane: CPU ops are not shared between threads. */
    private final CpuNeuralOps ops = new CpuNeuralOps();
    private final List<CpuNeuralOps> laneOps = new ArrayList<>();
    private final AtomicLong steps = new AtomicLong();
    private final AtomicLong bytes = new AtomicLong();
    private final AtomicLong nanos = new AtomicLong();
    /** Nanoseconds rank 0's lane spent in the payload and combine all-to-alls (waiting for the others included). */
    private final AtomicLong allToAllNanos = new AtomicLong();
    /** Test hook: a rank whose expert work throws, or -1. */
    private volatile int failingRank = -1;
    /** Test hook: a rank that leaves the collective group at its next step (lost), or -1. */
    private volatile int losingRank = -1;
    /** Why the lanes' collective group can no longer run (a member was lost), or null while it can. */
    private volatile String unusable;

    /** {@code size} expert lanes for {@code config}'s sparse layers; {@code size} must divide the experts per layer. */
    public ExpertParallelExperts(LlamaConfig config, int size) {
        this.config = Objects.requireNonNull(config, "config");
        requireFits(config, size);
        this.size = size;
        this.backend = new CpuBackend("expert-parallel");
        this.collectives = new CpuCollectives(backend);
        this.lanes = backend.forkExecutors(backend.rootExecutor(), size);
        this.group = CpuCollectiveGroup.inProcess("experts", lanes, CollectiveSettings.defaults());
        for (int r = 0; r < size; r++) {
            laneOps.add(new CpuNeuralOps());
        }
    }

    /**
     * Checks that {@code size} expert lanes can split {@code config}'s experts.
     *
     * @throws GraphlaneException naming the option and the values otherwise
     */
    public static void requireFits(LlamaConfig config, int size) {
        if (config.moe() == null) {
            throw new GraphlaneException("--expert-parallel " + size + ": the model has no mixture of experts");
        }
        if (size < 1 || config.moe().expertCount() % size != 0) {
            throw new GraphlaneException("--expert-parallel " + size + " must be >= 1 and divide the " + config.moe().expertCount()
                    + " experts per layer (num_local_experts / num_experts)");
        }
    }

    /** The number of expert ranks. */
    public int size() {
        return size;
    }

    /** The rank that owns expert {@code expert}. */
    public int ownerOf(int expert) {
        return expert / (config.moe().expertCount() / size);
    }

    /** Sparse-block steps run so far. */
    public long steps() {
        return steps.get();
    }

    /** Bytes of token rows the all-to-alls moved between different ranks (both directions), so far. */
    public long bytesMoved() {
        return bytes.get();
    }

    /** Nanoseconds spent from the first all-to-all's submission to the combine's completion, so far. */
    public long nanosInAllToAll() {
        return nanos.get();
    }

    /**
     * Nanoseconds rank 0's lane spent inside the payload and the combine all-to-alls so far (from the work before each
     * to the work after it on that lane, so waiting for the other ranks counts; the experts between them do not).
     */
    public long nanosInCollectives() {
        return allToAllNanos.get();
    }

    /** Makes rank {@code rank} leave the collective group at the next step, as a lost rank does; for fault tests. */
    public void loseRank(int rank) {
        this.losingRank = rank;
    }

    /** Makes rank {@code rank}'s expert work fail from now on (-1: none); for fault tests. */
    public void failRank(int rank) {
        this.failingRank = rank;
    }

    @Override
    public void run(MoeWeights<CpuTensor> weights, float[] normed, MoeRouting routing, float[] out) {
        if (unusable != null) {
            throw new GraphlaneException("layer " + weights.layer() + ": the expert lanes cannot run: " + unusable);
        }
        int hidden = config.hiddenSize();
        int experts = weights.expertCount();
        int per = experts / size;
        int[] slots = new int[routing.experts().length];
        int[][] rowsOf = new int[experts][];
        float[][] weightOf = new float[experts][];
        for (int e = 0; e < experts; e++) {
            rowsOf[e] = routing.rowsOf(e, slots);
            weightOf[e] = new float[rowsOf[e].length];
            for (int i = 0; i < rowsOf[e].length; i++) {
                weightOf[e][i] = routing.weights()[slots[i]];
            }
        }
        // what rank 0 sends each rank: per expert of the receiver, its rows; the others send nothing
        int[] sendRows = new int[size];
        float[] header = new float[size * per];
        for (int j = 0; j < size; j++) {
            for (int x = 0; x < per; x++) {
                int n = rowsOf[j * per + x].length;
                header[j * per + x] = n;
                sendRows[j] += n;
            }
        }
        int total = Arrays.stream(sendRows).sum();
        float[] payload = new float[total * hidden];
        int at = 0;
        for (int e = 0; e < experts; e++) {
            float[] g = MoeBlock.gather(normed, rowsOf[e], hidden);
            System.arraycopy(g, 0, payload, at * hidden, g.length);
            at += rowsOf[e].length;
        }
        long start = System.nanoTime();
        List<Completion> last = new ArrayList<>(size);
        List<CpuTensor> owned = new ArrayList<>();
        List<Result<CpuTensor>> results = new ArrayList<>();
        Result<CpuTensor> combined = null;
        long[] last0Marks = null;
        Completion markDone = null;
        CpuTensor[] outputs = new CpuTensor[size];
        try {
            for (int r = 0; r < size; r++) {
                CpuExecutor lane = lanes.get(r);
                CpuTensor hdr = r == 0 ? ops.fromHost(header, size, per) : ops.fromHost(new float[size * per], size, per);
                CpuTensor send = r == 0 ? ops.fromHost(payload, total, hidden) : ops.fromHost(new float[0], 0, hidden);
                int[] back = new int[size];
                back[0] = sendRows[r];
                outputs[r] = ops.fromHost(new float[sendRows[r] * hidden], sendRows[r], hidden);
                owned.addAll(List.of(hdr, send, outputs[r]));
                if (r == losingRank) {
                    losingRank = -1;
                    // the rank is lost instead of taking part: the others' all-to-alls fail naming it
                    Completion gone = collectives.leave(group, lane, new GraphlaneException("expert rank " + r + " was lost"));
                    last.addAll(List.of(gone, gone, gone, gone)); // four entries per rank, as the loop below reads them
                    continue;
                }
                Result<CpuTensor> counts = collectives.allToAll(hdr, ones(size), group, lane);
                long[] marks = new long[4];
                if (r == 0) {
                    backend.submit(lane, () -> marks[0] = System.nanoTime());
                }
                Result<CpuTensor> received = collectives.allToAll(send, r == 0 ? sendRows : new int[size], group, lane);
                if (r == 0) {
                    backend.submit(lane, () -> marks[1] = System.nanoTime());
                }
                int rank = r;
                CpuTensor result = outputs[r];
                Completion expertWork = backend.submit(lane, () -> runOwned(rank, weights, counts.value(), received.value(), result));
                if (r == 0) {
                    backend.submit(lane, () -> marks[2] = System.nanoTime());
                }
                Result<CpuTensor> returned = collectives.allToAll(result, back, group, lane);
                if (r == 0) {
                    last0Marks = marks;
                    markDone = backend.submit(lane, () -> marks[3] = System.nanoTime());
                }
                last.add(counts.completion());
                last.add(received.completion());
                last.add(expertWork);
                last.add(returned.completion());
                if (r == 0) {
                    combined = returned;
                }
                results.addAll(List.of(counts, received, returned));
            }
            // per rank, four completions: the split sizes, the payload, the experts, the combine
            int failedRank = -1;
            Throwable failure = null;
            Throwable collectiveFailure = null;
            for (int i = 0; i < last.size(); i++) {
                Outcome o = last.get(i).await();
                if (!(o instanceof Outcome.Failed f)) {
                    continue;
                }
                boolean expertWork = i % 4 == 2 && last.get(i - 1).failure().isEmpty() && last.get(i - 2).failure().isEmpty();
                if (!expertWork && collectiveFailure == null) {
                    collectiveFailure = f.cause();
                } else if (expertWork && failedRank < 0) {
                    failedRank = i / 4;
                    failure = f.cause();
                }
            }
            if (collectiveFailure != null) {
                failure = collectiveFailure;
                failedRank = -1;
            }
            if (failure != null) {
                if (failedRank < 0) {
                    // a member left: the collective group is poisoned, and with it every later step of these lanes
                    unusable = "an all-to-all of layer " + weights.layer() + " failed: " + failure.getMessage();
                    throw new GraphlaneException("layer " + weights.layer() + ": an expert all-to-all failed: " + failure.getMessage(), failure);
                }
                List<Integer> hit = new ArrayList<>();
                for (int e = failedRank * per; e < (failedRank + 1) * per; e++) {
                    for (int row : rowsOf[e]) {
                        hit.add(row);
                    }
                }
                if (!hit.isEmpty()) {
                    throw new ExpertRankFailedException("layer " + weights.layer() + ": expert rank " + failedRank + " (experts "
                        + failedRank * per + ".." + ((failedRank + 1) * per - 1) + ") failed: " + failure.getMessage(), failedRank,
                        hit.stream().mapToInt(Integer::intValue).distinct().sorted().toArray(), failure);
                }
                // no row of this step was routed to the failed rank: its failure cost this step nothing
            }
            float[] back = new float[total * hidden];
            ops.toHost(combined.value(), back);
            markDone.await();
            allToAllNanos.addAndGet((last0Marks[1] - last0Marks[0]) + (last0Marks[3] - last0Marks[2]));
            nanos.addAndGet(System.nanoTime() - start);
            steps.incrementAndGet();
            bytes.addAndGet(2L * (total - sendRows[0]) * hidden * Float.BYTES);
            at = 0;
            for (int e = 0; e < experts; e++) {
                int n = rowsOf[e].length;
                if (n > 0) {
                    MoeBlock.accumulate(out, Arrays.copyOfRange(back, at * hidden, (at + n) * hidden), rowsOf[e], weightOf[e], hidden);
                }
                at += n;
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new GraphlaneException("interrupted while the experts of layer " + weights.layer() + " ran", e);
        } finally {
            for (Completion c : last) {
                try {
                    c.await();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
            owned.forEach(ops::release);
            for (Result<CpuTensor> r : results) {
                if (r.completion().failure().isEmpty()) {
                    ops.release(r.value());
                }
            }
        }
    }

    /**
     * Rank {@code rank}'s experts over what it received: {@code counts} ({@code size × per}: from each source, rows per
     * owned expert) and {@code rows} (the sources' rows in source order, each source's grouped per expert); each owned
     * expert runs once over all its rows from every source, and its outputs go to {@code result} at the rows' places.
     */
    private void runOwned(int rank, MoeWeights<CpuTensor> weights, CpuTensor counts, CpuTensor rows, CpuTensor result) {
        if (failingRank == rank) {
            throw new GraphlaneException("expert rank " + rank + " failed (injected)");
        }
        CpuNeuralOps ops = laneOps.get(rank);
        int hidden = config.hiddenSize();
        int per = weights.expertCount() / size;
        float[] c = new float[size * per];
        ops.toHost(counts, c);
        float[] in = new float[rows.rows() * hidden];
        ops.toHost(rows, in);
        // the row index in `rows` of each (source, expert) block
        int[][] blockStart = new int[size][per];
        int at = 0;
        for (int s = 0; s < size; s++) {
            for (int x = 0; x < per; x++) {
                blockStart[s][x] = at;
                at += (int) c[s * per + x];
            }
        }
        float[] outRows = new float[rows.rows() * hidden];
        for (int x = 0; x < per; x++) {
            int n = 0;
            for (int s = 0; s < size; s++) {
                n += (int) c[s * per + x];
            }
            if (n == 0) {
                continue;
            }
            int[] ids = new int[n];
            int k = 0;
            for (int s = 0; s < size; s++) {
                for (int i = 0; i < (int) c[s * per + x]; i++) {
                    ids[k++] = blockStart[s][x] + i;
                }
            }
            int expert = rank * per + x;
            ExpertWeights<CpuTensor> w = weights.experts().get(expert);
            float[] y = MoeBlock.runExpert(ops, config, w, MoeBlock.gather(in, ids, hidden), n);
            for (int i = 0; i < n; i++) {
                System.arraycopy(y, i * hidden, outRows, ids[i] * hidden, hidden);
            }
        }
        result.data().put(0, outRows, 0, outRows.length);
    }

    private static int[] ones(int n) {
        int[] a = new int[n];
        Arrays.fill(a, 1);
        return a;
    }

    /** Stops the expert lanes. */
    @Override
    public void close() {
        backend.close();
    }
}
