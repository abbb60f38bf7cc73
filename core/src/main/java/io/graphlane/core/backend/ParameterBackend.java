package io.graphlane.core.backend;

import io.graphlane.core.param.EncodedLease;
import io.graphlane.core.param.Materialization;
import io.graphlane.core.param.WeightRecipe;

/**
 * Turns encoded checkpoint data into backend-native weights and binds them to parameter
 * slots. Orchestration validates a whole atomic unit with {@link #validateBind} before it
 * binds any of it, so a unit is bound completely or not at all.
 *
 * @param <X> the context used only while realizing parameters (a loading lane)
 * @param <P> one backend-native parameter slot
 * @param <W> a materialized backend-native weight
 * @param <M> the in-flight materialization guard
 */
public interface ParameterBackend<X, P, W, M extends Materialization<W>> {

    /** Starts lowering one encoded lease into a native weight; the returned guard owns the lease. */
    M materialize(EncodedLease lease, X context);

    /** Starts lowering a validated recipe into a native weight; the guard owns every source lease. */
    M materializeRecipe(WeightRecipe recipe, X context);

    /**
     * Waits for this exact realization, then releases its encoded source leases exactly once
     * (also on failure), and returns the weight or throws the realization's failure.
     */
    W finishMaterialization(M materialization) throws InterruptedException;

    /** Another handle on identical storage, with no re-read and no copy. */
    W shareMaterializedWeight(W weight);

    /** Checks name, shape, dtype and layout with no side effect; after it passes, {@link #bind} on the same arguments cannot fail. */
    void validateBind(P parameter, W weight);

    /** Binds {@code weight} to {@code parameter}; cannot fail after {@link #validateBind} passed on the same arguments. */
    void bind(P parameter, W weight);

    /**
     * Undoes {@link #bind}{@code (parameter, weight)} when a later bind of the same unit failed (a
     * backend bug, since bind cannot fail after validation): the slot holds no weight afterwards and
     * {@code weight} is the caller's again, who discards it. Never closes {@code weight}.
     */
    void unbind(P parameter, W weight);
}
