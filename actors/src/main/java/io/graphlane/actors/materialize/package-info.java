/**
 * The materialization supervisor: checkpoint leases and recipes to bound parameters, one atomic unit at a time.
 *
 * <p>Owns: {@link io.graphlane.actors.materialize.MaterializationSupervisor} (the protocol: {@code MaterializeUnit}
 * in, one {@link io.graphlane.actors.materialize.UnitReply} out; {@code Stop} from its owner), its per-unit workers and the per-unit ledger of
 * what each unit owns.
 *
 * <p>Guarantees: every lease of a unit is held until the exact completion of the materialization that reads it
 * (learned by message; {@code finishMaterialization} is only called once that completion has ended, so it never
 * blocks an actor); a unit is validated whole and bound completely or not at all; a failure anywhere — a bad tensor,
 * a failed completion, a refused bind, a crashed worker, a refused request — binds nothing, releases each lease of
 * the unit exactly once, and is answered with every cause; a crashed worker's ledger is taken back by the
 * supervisor, which waits for in-flight completions before releasing their leases; a unit bound just as the
 * supervisor stops is answered bound. Bounded: at most {@code max-active-units} units run and
 * {@code max-queued-units} wait; more are refused at once. A unit not settled within {@code unit-timeout} is
 * answered failed (phase {@code TIMEOUT}) at once, with nothing bound; its worker stays until each
 * materialization in flight has completed, releasing its leases then (late, never early), and its slot
 * goes to the next unit.
 *
 * <p>Refuses: an empty unit, a unit naming a parameter twice, a unit whose name is already in progress, a unit
 * beyond the bounds. A materialization whose completion never ends keeps its leases forever: nothing is released
 * under work that may still read it.
 */
package io.graphlane.actors.materialize;
