package io.graphlane.actors.materialize;

import io.graphlane.core.param.EncodedLease;
import io.graphlane.core.param.WeightRecipe;
import java.util.Objects;

/** Where one parameter's weight comes from: a lease already held (the supervisor takes it over) or a recipe. */
public sealed interface WeightSource permits WeightSource.FromLease, WeightSource.FromRecipe {

    /** A short description for errors. */
    String describe();

    /** A weight read from one leased tensor; from the moment the supervisor receives it, the supervisor owns the lease. */
    record FromLease(EncodedLease lease) implements WeightSource {
        public FromLease {
            Objects.requireNonNull(lease, "lease");
        }

        @Override
        public String describe() {
            return "lease " + lease.name();
        }
    }

    /** A weight derived by a recipe; its source leases are acquired when its materialization starts. */
    record FromRecipe(WeightRecipe recipe) implements WeightSource {
        public FromRecipe {
            Objects.requireNonNull(recipe, "recipe");
        }

        @Override
        public String describe() {
            return "recipe " + recipe.name();
        }
    }

    /** A source reading {@code lease}. */
    static WeightSource of(EncodedLease lease) {
        return new FromLease(lease);
    }

    /** A source evaluating {@code recipe}. */
    static WeightSource of(WeightRecipe recipe) {
        return new FromRecipe(recipe);
    }
}
