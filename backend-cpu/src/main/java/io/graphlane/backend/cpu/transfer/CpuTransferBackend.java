package io.graphlane.backend.cpu.transfer;

import io.graphlane.backend.cpu.CpuBackend;
import io.graphlane.backend.cpu.CpuCompletion;
import io.graphlane.backend.cpu.CpuExecutor;
import io.graphlane.backend.cpu.param.CpuStorage;
import io.graphlane.backend.cpu.param.CpuWeight;
import io.graphlane.core.backend.TransferBackend;
import java.util.Objects;

/**
 * The CPU transfer backend: promotion copies a host buffer into the budgeted {@link CpuDevicePool},
 * demotion copies a pool weight back into host memory. Each copy is one submission on the given
 * lane (so it is ordered like any other work there, and poisoned by a failed producer); the source
 * and destination bytes are retained until the copy's exact completion, so closing a handle early
 * never frees bytes under a running copy. A demotion never touches the device copy: the caller
 * frees it once the host copy completed, and keeps it if the copy failed. Residency bookkeeping
 * (admission, generations, eviction) is left to a caller.
 */
public final class CpuTransferBackend implements TransferBackend<CpuExecutor, CpuWeight, CpuHostBuffer> {
    private final CpuBackend device;
    private final CpuDevicePool pool;

    /** A transfer backend copying on lanes of {@code device} into and out of {@code pool}. */
    public CpuTransferBackend(CpuBackend device, CpuDevicePool pool) {
        this.device = Objects.requireNonNull(device, "device");
        this.pool = Objects.requireNonNull(pool, "pool");
    }

    /** The device tier's pool. */
    public CpuDevicePool pool() {
        return pool;
    }

    /**
     * Starts copying {@code host} into a new pool weight on {@code lane}.
     *
     * @throws DeviceBudgetExceededException before anything is queued, if the pool cannot hold the copy
     */
    @Override
    public CpuTransfer<CpuWeight> promote(CpuExecutor lane, CpuHostBuffer host) {
        Objects.requireNonNull(lane, "lane");
        CpuWeight source = host.weight();
        CpuStorage bytes = pool.allocate(source.name(), source.spec().byteSize());
        CpuWeight destination = new CpuWeight(source.name(), source.spec(), bytes);
        return copy(lane, source, destination, destination);
    }

    /** Starts copying the pool weight {@code weight} into new host memory on {@code lane}; {@code weight} is left as it is. */
    @Override
    public CpuTransfer<CpuHostBuffer> demote(CpuExecutor lane, CpuWeight weight) {
        Objects.requireNonNull(lane, "lane");
        CpuWeight destination = new CpuWeight(weight.name(), weight.spec(), CpuStorage.allocate(weight.name(), weight.spec().byteSize()));
        return copy(lane, weight, destination, new CpuHostBuffer(destination));
    }

    private <D> CpuTransfer<D> copy(CpuExecutor lane, CpuWeight source, CpuWeight destination, D published) {
        CpuWeight sourceHold;
        CpuWeight destinationHold;
        try {
            sourceHold = source.share();
            destinationHold = destination.share();
        } catch (RuntimeException e) {
            destination.close();
            throw e;
        }
        CpuCompletion completion;
        try {
            completion = device.submit(lane, () -> destinationHold.storage().buffer().put(sourceHold.bytes()));
        } catch (RuntimeException e) {
            sourceHold.close();
            destinationHold.close();
            destination.close();
            throw e;
        }
        device.retainUntilComplete(lane, completion, sourceHold);
        device.retainUntilComplete(lane, completion, destinationHold);
        return new CpuTransfer<>(source.name(), published, completion);
    }
}
