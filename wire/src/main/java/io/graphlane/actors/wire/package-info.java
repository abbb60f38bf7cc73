/**
 * The wire format of messages that cross nodes: Kryo 5 behind a Pekko serializer.
 *
 * <p>Owns: {@link io.graphlane.actors.wire.KryoWireSerializer} (the serializer, bound in reference.conf),
 * {@link io.graphlane.actors.wire.WireRegistry} (every class that crosses nodes, with its fixed id and serializer),
 * {@link io.graphlane.actors.wire.WireFields} (the bounded reads and writes of strings, counts and nested objects),
 * {@link io.graphlane.actors.wire.WireTensor} (tensors as raw little-endian bytes),
 * {@link io.graphlane.actors.wire.ActivationFrame} (an activation with its producer's handle) and
 * {@link io.graphlane.actors.wire.RemoteFailureException} (a failure from another node).
 *
 * <p>Guarantees: registration is required and ids are fixed, identical on every node running the same release;
 * typed actor refs travel as their serialized path through {@code ActorRefResolver}; a completion handle travels
 * as an identifier (node, lane, sequence), never as a device completion; a failure travels as its class name and
 * message; a tensor's bytes arrive exactly as sent.
 *
 * <p>Bounded: {@link io.graphlane.actors.wire.WireFields} reads every field whose size a frame declares, checking the
 * size against the bytes left in the frame and a cap before anything is allocated, so no frame makes a node allocate
 * more than a few times its own size. Caps: a string 64 KiB of UTF-8 ({@code MAX_STRING_BYTES}; longer free text is
 * cut on write, another longer string refused on write), a tensor's rank 16 ({@code MAX_RANK}) and its bytes what the
 * frame holds. Strings travel as a varint of their UTF-8 byte count plus one (0 for null), then the bytes, not in
 * Kryo's own encoding; classes travel by id only, never by name, and only ids from {@code WireRegistry.FIRST_ID}.
 * Changing any of this changes the wire format: every node of a cluster runs the same release.
 *
 * <p>Refuses, with one logged {@link io.graphlane.actors.wire.WireFormatException} naming the frame's size and the
 * field, and without stopping the node (Artery logs and drops a frame whose deserialization throws): an unregistered
 * class, a truncated frame, an unknown class id, a class by name or below id 100, a field that declares more than the
 * frame holds or its cap, a nested field of another type than its own (a message nested in itself), trailing bytes,
 * a tensor whose byte count does not match its dtype and shape, and a {@code Resolved} that carries a device
 * completion. Every decode error, whatever its cause, surfaces as that one exception type.
 */
package io.graphlane.actors.wire;
