/**
 * The pipeline-parallel engine. A model split into stages runs as a {@link io.graphlane.scheduler.pipeline.StageProgram}
 * over one lane per stage; the {@link io.graphlane.scheduler.pipeline.PipelineEngine} actor owns each request's
 * lifecycle (admitted → queued → active → finished | cancelled | deadline-exceeded | failed), forms micro-batches
 * and sends every stage of a step to the stage lanes at once, chained by completion handles, so stage k+1 orders
 * after stage k on the device side and several micro-batches occupy different stages at the same time. A stage may run
 * on several lanes (a tensor-parallel stage, one lane per shard: {@link io.graphlane.scheduler.pipeline.StageProgram#laneCount},
 * {@code Pipeline.startMultiLane}): its step is then several {@link io.graphlane.scheduler.pipeline.StageStep.Submission}s
 * ordered among themselves by index, its entries after every exit of the previous stage, and a step ends once every exit
 * of the last stage has finished. The part of
 * the lifecycle that does not depend on where stages run (per-request state, deadlines, cancels, the single end, the
 * admission count) lives in {@link io.graphlane.scheduler.pipeline.RequestLedger}, which the engine over stages hosted
 * on other cluster nodes shares. A request's sampling state travels typed, as a
 * {@link io.graphlane.scheduler.pipeline.TokenSampler}, to the stage that samples; each token comes back as a
 * {@link io.graphlane.scheduler.pipeline.SampledToken} (with log-probabilities when the request asked for them) and
 * reaches the request's {@link io.graphlane.scheduler.pipeline.EngineListener} as such.
 *
 * <p>Guarantees: a request's tokens reach its listener in order, followed by exactly one end; admission is bounded by
 * count and by KV-cache memory: a request runs only with an active slot and its reservation of the
 * {@link io.graphlane.scheduler.pipeline.KvBudget} (its prompt plus its maximum of new tokens, in positions, times what
 * one position takes on every stage), waits in a bounded queue otherwise, and is refused beyond it
 * ({@link io.graphlane.scheduler.pipeline.PipelineOverloadedException}) or when its reservation could never fit
 * ({@link io.graphlane.scheduler.pipeline.KvBudgetExceededException}); a reservation is given back exactly once, after
 * its request ended and the program's change works freed its caches on every stage lane; a stage output is freed exactly once,
 * after both the work that fills it and the work that reads it have completed; a cancelled request's step in flight
 * finishes unobserved; deadlines are checked before a step is submitted, never after; a failure local to one request fails only
 * that request: when a micro-batch of several requests fails, the stages that ran are rewound for each of them and
 * each runs its next step alone, so only the request whose own step fails again fails. A listener that throws fails only
 * its own request ({@link io.graphlane.scheduler.pipeline.ListenerFailedException}); no listener exception reaches the
 * engine actor. The engine runs supervised: a fault of its own stops it (logged) and, as it stops, it fails every
 * request it holds with {@link io.graphlane.scheduler.pipeline.PipelineStoppedException}, freeing their admission slots;
 * {@link io.graphlane.scheduler.pipeline.Pipeline} then refuses every submission ({@code isStopped()}), so no caller
 * waits on a dead engine.
 * A stage lane that stops for
 * good fails every request (and every later one) with a {@link io.graphlane.actors.lane.LaneStoppedException} instead
 * of leaving it waiting; a stopped engine lets go of its steps' outputs and stays until every stage submission is
 * answered, or its lane stopped, so no output held by a submission a lane never received is lost; its stop completes
 * only then, so a caller that frees the stage program after the engine and its lanes stopped finds nothing still held
 * by the engine (keep the lanes running, or stopping, until the engine's stop completes).
 *
 * <p>Observable without a message: after every message it handles, the engine publishes its running and waiting
 * requests, steps and tokens to a {@link io.graphlane.scheduler.pipeline.PipelineLoad} ({@code Pipeline.load()}),
 * which any thread (a metrics scrape) reads; {@code Pipeline.stats()} asks the engine instead.
 */
package io.graphlane.scheduler.pipeline;
