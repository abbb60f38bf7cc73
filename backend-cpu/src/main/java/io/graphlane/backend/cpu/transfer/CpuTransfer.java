package io.graphlane.backend.cpu.transfer;

import io.graphlane.backend.cpu.CpuCompletion;
import io.graphlane.core.backend.TransferBackend;
import io.graphlane.core.completion.Outcome;
import java.util.Objects;

/**
 * One in-flight CPU copy: its destination and the exact completion of the copy. The backend
 * retains the source and the destination's bytes until that completion, whatever the caller does
 * with its handles.
 *
 * @param <D> the destination type
 */
public final class CpuTransfer<D> implements TransferBackend.Transfer<D> {
    private final String name;
    private final D destination;
    private final CpuCompletion completion;

    CpuTransfer(String name, D destination, CpuCompletion completion) {
        this.name = Objects.requireNonNull(name, "name");
        this.destination = Objects.requireNonNull(destination, "destination");
        this.completion = Objects.requireNonNull(completion, "completion");
    }

    @Override
    public D destination() {
        return destination;
    }

    @Override
    public CpuCompletion completion() {
        return completion;
    }

    /**
     * The destination, once the copy completed successfully.
     *
     * @throws IllegalStateException naming the copy if it is still running or failed: its bytes are not the source's
     */
    public D publishedDestination() {
        Outcome outcome = completion.outcome().orElse(null);
        if (outcome == null) {
            throw new IllegalStateException("copy of " + name + " (" + completion.label() + ") is still running; its destination is not published");
        }
        if (outcome instanceof Outcome.Failed failed) {
            throw new IllegalStateException("copy of " + name + " (" + completion.label() + ") failed; its destination is never published: "
                    + failed.cause().getMessage(), failed.cause());
        }
        return destination;
    }
}
