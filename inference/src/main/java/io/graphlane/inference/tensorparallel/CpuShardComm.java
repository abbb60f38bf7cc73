package io.graphlane.inference.tensorparallel;

import io.graphlane.backend.cpu.collective.CpuCollectiveMember;
import io.graphlane.backend.cpu.collective.ReduceOp;
import io.graphlane.backend.cpu.nn.CpuTensor;

/**
 * A shard's collectives on CPU lanes: the member's synchronous operations, run on the worker of the shard's collective
 * lane (see {@link CollectiveShard}). The
 * member's transport decides where the other shards are: queues in this JVM, or rank actors on other nodes.
 */
public final class CpuShardComm implements ShardComm<CpuTensor> {
    private final CpuCollectiveMember member;

    /** The collectives of {@code member}, whose rank is the shard's. */
    public CpuShardComm(CpuCollectiveMember member) {
        this.member = member;
    }

    @Override
    public int rank() {
        return member.rank();
    }

    @Override
    public void allReduceSum(CpuTensor tensor) {
        member.allReduceInPlace(tensor, ReduceOp.SUM);
    }

    @Override
    public CpuTensor allGather(CpuTensor tensor) {
        return member.allGather(tensor);
    }

    @Override
    public void leave(Throwable cause) {
        member.leave(cause);
    }
}
