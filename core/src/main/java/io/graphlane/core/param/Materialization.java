package io.graphlane.core.param;

import io.graphlane.core.completion.Completion;

/**
 * An in-flight realization of one checkpoint weight: it owns the encoded source leases
 * until {@link #completion()} has completed, and they are released exactly once after it.
 *
 * @param <W> the backend-native materialized weight
 */
public interface Materialization<W> {

    /** The name of the weight being materialized. */
    String name();

    /** The exact completion of this realization. */
    Completion completion();
}
