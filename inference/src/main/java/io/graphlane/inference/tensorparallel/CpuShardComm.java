package io.graphlane.inference.tensorparallel;

import io.graphlane.backend.cpu.collective.CpuCollectiveMember;
import io.graphlane.backend.cpu.collective.ReduceOp;
import io.graphlane.backend.cpu.nn.CpuTensor;

/** A shard's collectives on CPU lanes: the member's synchronous operations, run on the shard's lane worker. */
final class CpuShardComm implements ShardComm<CpuTensor> {
    private final CpuCollectiveMember member;

    CpuShardComm(CpuCollectiveMember member) {
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
