/**
 * The lane actor: one Pekko Typed actor per backend executor, the only caller of
 * {@code submit}, {@code orderAfter} and {@code retainUntilComplete} on it.
 *
 * <p>Owns: {@link io.graphlane.actors.lane.LaneProtocol} (what a lane can be told and what it
 * answers), {@link io.graphlane.actors.lane.LaneActor} (the behavior),
 * {@link io.graphlane.actors.lane.LaneGroup} (spawning lanes over one backend) and the
 * {@link io.graphlane.actors.lane.LaneRegistry} lanes find each other through. A lane's handle-resolution
 * table (the handles it produced, kept until their consumers have asked or their request is forgotten, and
 * who waits for handles not arrived yet) is the plain class {@code HandleTable}.
 *
 * <p>Guarantees:
 * <ul>
 *   <li>Handles are named by the caller, so submissions to many lanes go out at once; a consumer
 *       whose producer is not resolved yet waits inside its lane actor, which subscribes to the
 *       producer's lane by message ({@code Subscribe} / {@code Resolved}), never in the caller.</li>
 *   <li>Same-device producers are ordered on the device ({@code orderAfter} on the resolved
 *       completion, also for producers on the same lane so that a failure poisons); producers on
 *       another device are awaited by message. A producer that failed poisons its consumers without
 *       submitting them: their failure is a {@code PoisonedPreconditionException} naming the root.</li>
 *   <li>Bounded: at most {@code max-in-flight} submitted and {@code max-queued} waiting; beyond that a
 *       submission (or a whole batch) is refused at once with {@code LaneOverloaded}.</li>
 *   <li>Every retained value is released exactly once: after the exact completion of submitted work,
 *       at once for work that never ran.</li>
 *   <li>Cancel drops queued work and abandons submitted work, which keeps its values until its exact
 *       completion and whose outcome is never published. Stop refuses new work, drops queued work,
 *       lets in-flight work finish, then shuts the executor down.</li>
 *   <li>However the actor stops (a Stop, a crash, its parent or the system stopping), it lets go of
 *       what it holds: work never submitted ends failed ({@code LaneStoppedException}) and its values
 *       are released at once; submitted work keeps its values until its exact completion, and its
 *       submitter is still answered then; waiting subscribers are told the handle ended; the executor
 *       is shut down.</li>
 *   <li>The actor never blocks: completions are queued by the executor's callback and drained by
 *       one coalesced message per burst; replies to one receiver from one step travel as one message.</li>
 * </ul>
 *
 * <p>Observable without a message: each lane actor publishes its queued and in-flight counts to its
 * {@link io.graphlane.actors.lane.LaneLoad} ({@code LaneGroup.load(lane)}) as they change, for metrics;
 * {@code GetStatus} asks the actor for the full picture.
 *
 * <p>Refuses: unbounded growth, waiting on a thread, publishing the result of abandoned work, and
 * ordering across devices on the device side (it waits by message instead).
 *
 * <p>Why the producer keeps its resolution: a consumer may ask after the producer has finished. A
 * submission therefore says how many consumers will ask ({@code expectedConsumers}); the lane keeps
 * the handle's resolution until they have, or until the request is cancelled or forgotten, so no
 * consumer waits for an answer that was already thrown away.
 */
package io.graphlane.actors.lane;
