package io.graphlane.backend.cpu.collective;

import io.graphlane.backend.cpu.CpuBackend;
import io.graphlane.backend.cpu.CpuCompletion;
import io.graphlane.backend.cpu.CpuExecutor;
import io.graphlane.backend.cpu.nn.CpuTensor;
import io.graphlane.core.backend.CollectiveBackend;
import io.graphlane.core.completion.Completion;
import io.graphlane.core.completion.Outcome;
import java.util.Arrays;
import java.util.Objects;
import java.util.function.Function;

/**
 * The CPU {@link CollectiveBackend}: each call submits the collective as work on the calling lane
 * and returns at once; the members rendezvous on their lane workers, never on the caller's thread.
 * The result is a new tensor owned by the caller, readable once the returned completion succeeded
 * (free it with {@link io.graphlane.backend.cpu.nn.CpuNeuralOps#release}); the input is kept
 * reachable until then and never changed or freed.
 */
public final class CpuCollectives implements CollectiveBackend<CpuExecutor, CpuTensor, CpuCollectiveGroup> {
    private final CpuBackend backend;

    /** Collectives submitted through {@code backend}, whose lanes the groups are made of. */
    public CpuCollectives(CpuBackend backend) {
        this.backend = Objects.requireNonNull(backend, "backend");
    }

    /** The backend the collectives are submitted to. */
    public CpuBackend backend() {
        return backend;
    }

    @Override
    public Result<CpuTensor> allReduce(CpuTensor value, CpuCollectiveGroup group, CpuExecutor executor) {
        return allReduce(value, ReduceOp.SUM, group, executor);
    }

    /**
     * Reduces {@code value} element-wise with {@code op} across the group.
     *
     * @throws io.graphlane.core.backend.AbsentCapabilityException before anything is queued if the CPU lacks {@code op}
     */
    public Result<CpuTensor> allReduce(CpuTensor value, ReduceOp op, CpuCollectiveGroup group, CpuExecutor executor) {
        Objects.requireNonNull(op, "op");
        if (!op.supportedOnCpu()) {
            throw new io.graphlane.core.backend.AbsentCapabilityException("cpu", "all-reduce with reduction " + op
                    + " (the CPU computes SUM, MIN and MAX)");
        }
        return submit(value, group, executor, member -> member.allReduce(value, op));
    }

    @Override
    public Result<CpuTensor> allGather(CpuTensor value, CpuCollectiveGroup group, CpuExecutor executor) {
        return submit(value, group, executor, member -> member.allGather(value));
    }

    /**
     * Equal partitions: {@code value}'s rows split into one block per member.
     *
     * @throws IllegalArgumentException before anything is queued if the rows do not split evenly
     */
    @Override
    public Result<CpuTensor> allToAll(CpuTensor value, CpuCollectiveGroup group, CpuExecutor executor) {
        Objects.requireNonNull(value, "value");
        int n = group.size();
        if (value.rows() % n != 0) {
            throw new IllegalArgumentException("all-to-all on lane " + executor + " of group " + group.name() + ": " + value.rows()
                    + " rows do not split into " + n + " equal blocks; give send counts instead");
        }
        int[] counts = new int[n];
        Arrays.fill(counts, value.rows() / n);
        return allToAll(value, counts, group, executor);
    }

    /**
     * Variable counts.
     *
     * @throws IllegalArgumentException before anything is queued if the counts do not cover {@code value}'s rows
     */
    @Override
    public Result<CpuTensor> allToAll(CpuTensor value, int[] sendCounts, CpuCollectiveGroup group, CpuExecutor executor) {
        Objects.requireNonNull(value, "value");
        int[] counts = sendCounts.clone();
        long sum = 0;
        for (int c : counts) {
            sum += Math.max(0, c);
        }
        if (counts.length != group.size() || Arrays.stream(counts).anyMatch(c -> c < 0) || sum != value.rows()) {
            throw new IllegalArgumentException("all-to-all on lane " + executor + " of group " + group.name() + ": send counts "
                    + Arrays.toString(counts) + " must be " + group.size() + " non-negative counts adding up to the tensor's "
                    + value.rows() + " rows");
        }
        return submit(value, group, executor, member -> member.allToAll(value, counts));
    }

    /**
     * Makes the member on {@code executor} leave {@code group} for {@code cause}, as lane work: every
     * other member's current or next collective fails naming it.
     */
    public Completion leave(CpuCollectiveGroup group, CpuExecutor executor, Throwable cause) {
        CpuCollectiveMember member = group.member(group.rankOf(executor));
        return backend.submit(executor, () -> member.leave(cause));
    }

    private Result<CpuTensor> submit(CpuTensor value, CpuCollectiveGroup group, CpuExecutor executor,
                                     Function<CpuCollectiveMember, CpuTensor> collective) {
        Objects.requireNonNull(value, "value");
        Objects.requireNonNull(group, "group");
        CpuCollectiveMember member = group.member(group.rankOf(executor));
        LateResult result = new LateResult();
        CpuCompletion completion = backend.submit(executor, () -> result.value = collective.apply(member));
        result.completion = completion;
        backend.retainUntilComplete(executor, completion, value);
        return result;
    }

    /** A result whose tensor the lane's work makes; readable once the completion succeeded. */
    private static final class LateResult implements Result<CpuTensor> {
        private volatile CpuTensor value;
        private volatile CpuCompletion completion;

        @Override
        public CpuTensor value() {
            Outcome outcome = completion.outcome().orElse(null);
            if (outcome == null) {
                throw new IllegalStateException("collective result of " + completion.label() + " read before its completion");
            }
            if (outcome instanceof Outcome.Failed failed) {
                throw new IllegalStateException("collective " + completion.label() + " failed and has no result: " + failed.cause().getMessage(),
                        failed.cause());
            }
            return value;
        }

        @Override
        public Completion completion() {
            return completion;
        }
    }
}
