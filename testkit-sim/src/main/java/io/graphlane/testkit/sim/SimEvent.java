package io.graphlane.testkit.sim;

import io.graphlane.core.completion.Outcome;

/**
 * One entry of a simulated device's timeline: a submission started or ended on a lane.
 *
 * @param order the position of this event in the device's timeline (strictly increasing)
 * @param kind whether the submission started or ended
 * @param submission the submission's completion label
 * @param lane the executor's name
 * @param deviceNanos device time of the event, from the backend's start
 * @param outcome the submission's outcome for {@link Kind#END}, null for {@link Kind#START}
 */
public record SimEvent(long order, Kind kind, String submission, String lane, long deviceNanos, Outcome outcome) {

    /** A submission's work started (its preconditions held) or ended (ran, failed, or was poisoned without starting). */
    public enum Kind { START, END }

    @Override
    public String toString() {
        return "#" + order + " " + kind + " " + submission + " @" + deviceNanos + "ns" + (outcome == null ? "" : " " + outcome);
    }
}
