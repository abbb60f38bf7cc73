/**
 * Lane graph execution over lane actors.
 *
 * <p>Owns: {@link io.graphlane.scheduler.graph.GraphRunner} (admission and start of graph runs),
 * one run actor per request that sends nodes to lanes and collects their outcomes, and the result
 * model ({@link io.graphlane.scheduler.graph.GraphResult}, {@link io.graphlane.scheduler.graph.NodeResult},
 * {@link io.graphlane.scheduler.graph.WorkState}, {@link io.graphlane.scheduler.graph.RequestState}).
 *
 * <p>Guarantees: a graph is admitted whole or refused before anything is sent (size limit, unknown
 * lanes, duplicate request id, active request limit). Nodes go to their lanes in topological order with
 * at most {@code max-in-flight-per-lane} outstanding per lane, so every run progresses; the lanes do
 * the ordering (device-side {@code orderAfter} on resolved handles). A failed node poisons exactly its
 * dependents, whose result names the root node; independent branches finish. Deadlines are checked
 * before submission (by the runner before sending and by the lane before handing work to the backend),
 * never after. Cancel drops what was not submitted and abandons what was; the result completes only
 * after the exact completion of everything submitted. A lane's refusal (overload) fails the request and
 * cancels the rest of it; so does a lane actor that stopped for good (the run watches its lanes, and the
 * nodes the lane never took in fail with a {@code LaneStoppedException}). A passed deadline also cancels
 * the run on its lanes, so nodes already sent never wait on producers that will not be sent. The
 * retained values of nodes never sent to a lane are released by the run, exactly once.
 *
 * <p>Work states: queued → prepared → submitted → committed | abandoned | failed. A lane reports a
 * submission's exact completion and its outcome in one message, so "completing" is not a separately
 * observable state in this package.
 *
 * <p>Refuses: retrying refused work, waiting on a thread, and graphs that {@code LaneGraph.Builder}
 * did not validate. The pipeline-parallel engine lives in {@code io.graphlane.scheduler.pipeline}.
 */
package io.graphlane.scheduler.graph;
