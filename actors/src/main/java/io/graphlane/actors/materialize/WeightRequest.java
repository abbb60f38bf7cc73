package io.graphlane.actors.materialize;

import java.util.Objects;

/**
 * One parameter of an atomic unit and where its weight comes from.
 *
 * @param name      the parameter's name, unique in its unit, used in replies and errors
 * @param parameter the backend-native parameter slot the weight is bound to
 * @param source    the lease or recipe that yields the weight
 * @param <P>       the backend's parameter slot type
 */
public record WeightRequest<P>(String name, P parameter, WeightSource source) {
    public WeightRequest {
        Objects.requireNonNull(name, "name");
        Objects.requireNonNull(parameter, "parameter");
        Objects.requireNonNull(source, "source");
    }
}
