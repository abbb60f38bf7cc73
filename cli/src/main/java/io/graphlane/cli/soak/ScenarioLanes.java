package io.graphlane.cli.soak;

import io.graphlane.actors.lane.LaneGroup;
import io.graphlane.actors.lane.LaneSettings;
import io.graphlane.testkit.sim.SimCompletion;
import io.graphlane.testkit.sim.SimExecutor;
import io.graphlane.testkit.sim.SimWork;
import java.util.SplittableRandom;
import java.util.concurrent.CompletableFuture;
import org.apache.pekko.actor.typed.ActorSystem;

/**
 * The lane actors of one soak scenario on its simulated device: spawned at the start, stopped at most once (by a
 * fault or at the end), their stop driven to completion and checked. Graph and pipeline scenarios share it.
 */
final class ScenarioLanes {
    private final ScenarioRun run;
    private final String[] names;
    private final LaneGroup<SimExecutor, SimCompletion, SimWork> group;
    private CompletableFuture<Void> stopped;

    /** Spawns {@code count} lanes named {@code prefix}0, {@code prefix}1, … with {@code settings}. */
    ScenarioLanes(ScenarioRun run, ActorSystem<?> system, String prefix, int count, LaneSettings settings) {
        this.run = run;
        this.names = new String[count];
        for (int i = 0; i < count; i++) {
            names[i] = prefix + i;
        }
        this.group = LaneGroup.builder(system, run.sim()).lanes(names).settings(settings).spawn();
    }

    String[] names() {
        return names.clone();
    }

    LaneGroup<SimExecutor, SimCompletion, SimWork> group() {
        return group;
    }

    /** Schedules, each for some scenarios at a random round, the loss of the device (8 in 100) and the stop of the lanes (6 in 100). */
    void scheduleDeviceAndLaneFaults(SplittableRandom rnd) {
        if (rnd.nextInt(100) < 8) {
            run.atRound(rnd.nextInt(6), () -> {
                run.note("device lost at round " + run.round());
                run.sim().loseDevice("device lost (soak fault)");
            });
        }
        if (rnd.nextInt(100) < 6) {
            run.atRound(rnd.nextInt(6), () -> {
                run.note("lanes stopped at round " + run.round());
                stop();
            });
        }
    }

    /** Stops the lanes, once. */
    void stop() {
        if (stopped == null) {
            stopped = group.stop().toCompletableFuture();
            stopped.whenComplete((v, e) -> run.wake());
        }
    }

    /** Stops the lanes (if no fault did) and drives the device until they have, noting a failed stop as a problem. */
    void stopAndCheck() {
        stop();
        run.driveUntil(stopped::isDone, "lane stop");
        if (stopped.isCompletedExceptionally()) {
            run.problem("lane stop failed: " + stopped.handle((v, e) -> String.valueOf(e)).join());
        }
    }
}
