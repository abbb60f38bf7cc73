package io.graphlane.cli.attack;

import java.util.List;

/**
 * What one attack did to its target.
 *
 * @param name the attack's kind
 * @param sent requests or connections the attack sent
 * @param problems what went wrong with the target's answers to the attack itself (empty when every answer was the
 *     expected kind)
 * @param followUpFailures follow-up checks (a normal request, the health check) that failed after it, each named
 * @param crashed whether the target was gone after it (its process ended, or nothing accepts on its port)
 * @param seconds how long the attack and its follow-up took
 */
public record AttackResult(String name, int sent, List<String> problems, List<String> followUpFailures, boolean crashed,
                           double seconds) {
    public AttackResult {
        problems = List.copyOf(problems);
        followUpFailures = List.copyOf(followUpFailures);
    }

    /** Whether the target held up: no crash, no failed follow-up, every answer of the expected kind. */
    public boolean held() {
        return !crashed && problems.isEmpty() && followUpFailures.isEmpty();
    }
}
