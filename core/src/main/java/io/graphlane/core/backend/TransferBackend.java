package io.graphlane.core.backend;

import io.graphlane.core.completion.Completion;

/**
 * Promotes host storage to device weights and demotes device weights to host copies,
 * without changing their meaning.
 *
 * @param <E> the executor the copy runs on
 * @param <W> the device weight
 * @param <H> the backend-owned host buffer
 */
public interface TransferBackend<E, W, H> {

    /** An in-flight copy: it retains source and destination until {@link #completion()} has completed. */
    interface Transfer<D> {
        /** The destination; usable (and counted as resident) only after the completion succeeded. */
        D destination();

        /** The exact completion of this copy. */
        Completion completion();
    }

    /** Starts making a device weight from {@code host} on {@code executor}. */
    Transfer<W> promote(E executor, H host);

    /** Starts making a host copy of {@code weight} on {@code executor}; the device copy stays until it completes. */
    Transfer<H> demote(E executor, W weight);
}
