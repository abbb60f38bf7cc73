package io.graphlane.cluster;

import io.graphlane.actors.lane.LaneGroup;
import io.graphlane.actors.lane.LaneProtocol;
import io.graphlane.core.backend.SubmissionBackend;
import io.graphlane.core.completion.Completion;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.ActorSystem;

/**
 * Hosts each stage as one lane actor ({@code stage-i}) over one executor forked from {@code backend}. Stages
 * without weights to load: their weights count as bound as soon as the lanes are up. Stopping stops the lanes
 * (in-flight work finishes first) and, if the hosting owns the backend, then shuts the backend down.
 */
public final class LaneStageHosting<E, C extends Completion, W> implements StageHosting {
    private final SubmissionBackend<E, C, W> backend;
    private final boolean ownsBackend;

    /** Hosting over {@code backend}, which its caller keeps and closes. */
    public LaneStageHosting(SubmissionBackend<E, C, W> backend) {
        this(backend, false);
    }

    private LaneStageHosting(SubmissionBackend<E, C, W> backend, boolean ownsBackend) {
        this.backend = backend;
        this.ownsBackend = ownsBackend;
    }

    /** Hosting over {@code backend}, which it owns: {@link #stop} shuts it down once the lanes have stopped. */
    public static <E, C extends Completion, W> LaneStageHosting<E, C, W> owning(SubmissionBackend<E, C, W> backend) {
        return new LaneStageHosting<>(backend, true);
    }

    /** The lane name of stage {@code stage}. */
    public static String laneName(int stage) {
        return "stage-" + stage;
    }

    @Override
    public CompletionStage<HostedStages> host(ActorSystem<?> system, int rank, List<Integer> stages) {
        if (stages.isEmpty()) {
            return CompletableFuture.completedFuture(new HostedStages(Map.of(), CompletableFuture.completedFuture(null),
                    () -> CompletableFuture.completedFuture(null)));
        }
        try {
            LaneGroup<E, C, W> group = LaneGroup.builder(system, backend)
                    .lanes(stages.stream().map(LaneStageHosting::laneName).toArray(String[]::new))
                    .spawn();
            Map<Integer, ActorRef<LaneProtocol.Command>> lanes = new LinkedHashMap<>();
            for (int stage : stages) {
                lanes.put(stage, group.lane(laneName(stage)));
            }
            return CompletableFuture.completedFuture(new HostedStages(lanes, CompletableFuture.completedFuture(null), group::stop));
        } catch (RuntimeException e) {
            return CompletableFuture.failedFuture(e);
        }
    }

    @Override
    public CompletionStage<Void> stop(HostedStages hosted) {
        CompletionStage<Void> lanes = hosted.stop().get();
        if (!ownsBackend) {
            return lanes;
        }
        CompletableFuture<Void> done = new CompletableFuture<>();
        lanes.whenComplete((ok, lanesFailed) -> backend.shutdown().whenDone(outcome -> {
            if (lanesFailed != null) {
                done.completeExceptionally(lanesFailed);
            } else {
                done.complete(null);
            }
        }));
        return done;
    }
}
