/**
 * The wire format of messages that cross nodes: Kryo 5 behind a Pekko serializer.
 *
 * <p>Owns: {@link io.graphlane.actors.wire.KryoWireSerializer} (the serializer, bound in reference.conf),
 * {@link io.graphlane.actors.wire.WireRegistry} (every class that crosses nodes, with its fixed id and serializer),
 * {@link io.graphlane.actors.wire.WireTensor} (tensors as raw little-endian bytes),
 * {@link io.graphlane.actors.wire.ActivationFrame} (an activation with its producer's handle) and
 * {@link io.graphlane.actors.wire.RemoteFailureException} (a failure from another node).
 *
 * <p>Guarantees: registration is required and ids are fixed, identical on every node running the same release;
 * typed actor refs travel as their serialized path through {@code ActorRefResolver}; a completion handle travels
 * as an identifier (node, lane, sequence), never as a device completion; a failure travels as its class name and
 * message; a tensor's bytes arrive exactly as sent.
 *
 * <p>Refuses, with a logged {@link io.graphlane.actors.wire.WireFormatException} and without stopping the node:
 * an unregistered class, a truncated frame, an unknown class id, trailing bytes, a tensor whose byte count does
 * not match its dtype and shape, and a {@code Resolved} that carries a device completion.
 */
package io.graphlane.actors.wire;
