package io.graphlane.actors.materialize;

import java.util.List;
import java.util.stream.Collectors;

/** The one reply to a unit: bound completely, or failed with nothing bound and every lease released. */
public sealed interface UnitReply permits UnitReply.Bound, UnitReply.Failed {

    /** The unit's name. */
    String unit();

    /** Every parameter of the unit was validated and then bound. */
    record Bound(String unit, List<String> parameters) implements UnitReply {
        public Bound {
            parameters = List.copyOf(parameters);
        }
    }

    /** Nothing of the unit was bound and every lease it owned was released exactly once; {@code failures} lists every cause. */
    record Failed(String unit, List<UnitFailure> failures) implements UnitReply {
        public Failed {
            failures = List.copyOf(failures);
        }

        /** One line per cause, for logs and users. */
        public String describe() {
            return "unit " + unit + " failed: " + failures.stream().map(UnitFailure::toString).collect(Collectors.joining("; "));
        }
    }
}
