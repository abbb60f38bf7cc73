package io.graphlane.cluster;

import java.util.Optional;
import java.util.concurrent.CompletionStage;
import java.util.function.Supplier;
import org.apache.pekko.actor.ExtendedActorSystem;
import org.apache.pekko.http.javadsl.model.ContentTypes;
import org.apache.pekko.http.javadsl.model.HttpEntities;
import org.apache.pekko.http.javadsl.model.HttpResponse;
import org.apache.pekko.http.javadsl.model.StatusCodes;
import org.apache.pekko.http.javadsl.model.headers.RetryAfter;
import org.apache.pekko.http.javadsl.server.AllDirectives;
import org.apache.pekko.http.javadsl.server.Route;
import org.apache.pekko.management.HealthCheckSettings;
import org.apache.pekko.management.javadsl.CheckResult;
import org.apache.pekko.management.javadsl.HealthChecks;
import org.apache.pekko.management.javadsl.ManagementRouteProvider;
import org.apache.pekko.management.javadsl.ManagementRouteProviderSettings;

/**
 * The health routes of Pekko Management ({@code GET /startup}, {@code /ready}, {@code /alive}, at the paths of
 * {@code pekko.management.health-checks}), in place of Pekko's own: the same checks ({@link NodeReadinessCheck},
 * {@link NodeLivenessCheck}, Pekko's cluster-membership check and any other configured), answered 200 when they pass
 * and 503 with {@code Retry-After} and why when one does not ({@link NodeReadiness#whyNotReady()} for readiness, the
 * fatal failure for liveness, else the failing check's own reason), where Pekko's routes answer 500:
 * a node that is not ready is unavailable, not broken. Registered by graphlane.cluster.profiles.common, which also
 * switches Pekko's routes off.
 */
public final class NodeHealthRoutes extends AllDirectives implements ManagementRouteProvider {
    /** Seconds a prober is told to wait before asking again. */
    static final long RETRY_AFTER_SECONDS = 5;

    private final HealthChecks checks;
    private final HealthCheckSettings settings;
    private final NodeReadiness readiness;

    /** The routes of {@code system}'s node; Pekko Management constructs them. */
    public NodeHealthRoutes(ExtendedActorSystem system) {
        this.settings = HealthCheckSettings.create(system.settings().config().getConfig("pekko.management.health-checks"));
        this.checks = new HealthChecks(system, settings);
        this.readiness = NodeReadiness.get(system);
    }

    @Override
    public Route routes(ManagementRouteProviderSettings routeSettings) {
        return concat(
                path(settings.startupPath(), () -> get(() -> answer(checks.startupResult(), Optional::empty))),
                path(settings.readinessPath(), () -> get(() -> answer(checks.readyResult(), readiness::whyNotReady))),
                path(settings.livenessPath(), () -> get(() -> answer(checks.aliveResult(),
                        () -> readiness.failure().map(f -> "the node failed: " + f.getMessage())))));
    }

    /** 200 if {@code result} passed; else 503 with the node's own {@code why} when it has one, Pekko's reason otherwise. */
    private Route answer(CompletionStage<CheckResult> result, Supplier<Optional<String>> why) {
        return completeWithFuture(result.handle((checked, error) -> {
            if (error == null && checked.isSuccess()) {
                return HttpResponse.create().withStatus(StatusCodes.OK).withEntity(HttpEntities.create(ContentTypes.TEXT_PLAIN_UTF8, "OK"));
            }
            String reason = why.get().orElseGet(() -> error != null ? "health check failed: " + error.getMessage()
                    : checked.failure().orElse("not healthy"));
            return HttpResponse.create().withStatus(StatusCodes.SERVICE_UNAVAILABLE)
                    .addHeader(RetryAfter.create(RETRY_AFTER_SECONDS))
                    .withEntity(HttpEntities.create(ContentTypes.TEXT_PLAIN_UTF8, reason));
        }));
    }
}
