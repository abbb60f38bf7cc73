package io.graphlane.cluster.pipeline;

import com.esotericsoftware.kryo.Kryo;
import com.esotericsoftware.kryo.Serializer;
import com.esotericsoftware.kryo.io.Input;
import com.esotericsoftware.kryo.io.Output;
import io.graphlane.actors.wire.WireFields;
import io.graphlane.actors.wire.WireFormatException;
import io.graphlane.actors.wire.WireRegistry;
import io.graphlane.actors.wire.WireTensor;
import io.graphlane.core.completion.Outcome;
import java.util.List;
import org.apache.pekko.actor.ExtendedActorSystem;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.ActorRefResolver;
import io.graphlane.actors.wire.PooledKryoSerializer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The wire format of the cross-node stage protocol ({@link StageHost}, {@link ShardHost} and {@link StageReply} messages): Kryo 5 with
 * registration required, the fixed ids of {@link WireRegistry} (frames, tensors, handles, outcomes) plus this
 * protocol's own fixed ids from 200, actor refs through {@link ActorRefResolver}. A frame of an unknown class,
 * truncated, declaring a field larger than the frame or its cap ({@link WireFields}; a step of at most 2^16 segments
 * and 2^20 tokens) or with trailing bytes is refused with a logged {@link WireFormatException}; the node
 * stays up.
 */
public final class StageWireSerializer extends PooledKryoSerializer {
    /** This serializer's Pekko identifier; the same on every node. */
    public static final int IDENTIFIER = 474_202;

    /**
     * The protocol's classes with their fixed ids; never renumbered or reused (200 to 202 were the single-request
     * step, its poison and its forget, retired when steps became batched; 205 and 210 the shard step and the step
     * without each segment's reserved positions).
     */
    static final int STEP_DONE_ID = 203;
    static final int STEP_FAILED_ID = 204;
    static final int SHARD_FORGET_ID = 206;
    static final int SHARD_REFORM_ID = 207;
    static final int SHARD_REFORMED_ID = 208;
    static final int SHARD_REFORM_FAILED_ID = 209;
    static final int SHARD_REWIND_ID = 211;
    static final int STEP_ID = 212;
    static final int SHARD_STEP_ID = 213;

    /** The most segments (requests) one step may carry, and the most tokens. */
    private static final int MAX_SEGMENTS = 1 << 16;
    private static final int MAX_TOKENS = 1 << 20;

    /** The serializer of {@code system}; Pekko constructs it from pekko.actor.serializers. */
    public StageWireSerializer(ExtendedActorSystem system) {
        super(system, ENTRIES);
    }

    /** The stage protocol's classes: its Kryo knows these and the wire registry's, and nothing else. */
    static final List<WireRegistry.Entry> ENTRIES = List.of(
            new WireRegistry.Entry(STEP_ID, StageHost.Step.class, StepSerializer::new),
            new WireRegistry.Entry(STEP_DONE_ID, StageReply.StepDone.class, r -> new StepDoneSerializer()),
            new WireRegistry.Entry(STEP_FAILED_ID, StageReply.StepFailed.class, r -> new StepFailedSerializer()),
            new WireRegistry.Entry(SHARD_STEP_ID, ShardHost.Step.class, r -> new ShardStepSerializer()),
            new WireRegistry.Entry(SHARD_FORGET_ID, ShardHost.Forget.class, r -> new ShardForgetSerializer()),
            new WireRegistry.Entry(SHARD_REWIND_ID, ShardHost.Rewind.class, r -> new ShardRewindSerializer()),
            new WireRegistry.Entry(SHARD_REFORM_ID, ShardHost.Reform.class, ShardReformSerializer::new),
            new WireRegistry.Entry(SHARD_REFORMED_ID, ShardHost.Reformed.class, r -> new ShardReformedSerializer()),
            new WireRegistry.Entry(SHARD_REFORM_FAILED_ID, ShardHost.ReformFailed.class, r -> new ShardReformFailedSerializer()));

    @Override
    public int identifier() {
        return IDENTIFIER;
    }

    private static void writeInts(Output out, int[] values) {
        out.writeVarInt(values.length, true);
        out.writeInts(values, 0, values.length, true);
    }

    private static void writeLongs(Output out, long[] values) {
        out.writeVarInt(values.length, true);
        out.writeLongs(values, 0, values.length, false);
    }

    private static long[] longs(Input in, String field, int max) {
        return in.readLongs(WireFields.count(in, field, max), false);
    }

    private static final class StepSerializer extends Serializer<StageHost.Step> {
        private final ActorRefResolver resolver;

        StepSerializer(ActorRefResolver resolver) {
            this.resolver = resolver;
        }

        @Override
        public void write(Kryo kryo, Output out, StageHost.Step s) {
            out.writeVarLong(s.stepId(), false);
            out.writeVarInt(s.stage(), true);
            writeLongs(out, s.requestIds());
            writeInts(out, s.starts());
            writeInts(out, s.lengths());
            writeInts(out, s.reserved());
            writeInts(out, s.tokens());
            out.writeBoolean(s.activation() != null);
            if (s.activation() != null) {
                kryo.writeObject(out, s.activation());
            }
            writeLongs(out, s.forget());
            writeLongs(out, s.rewindIds());
            writeInts(out, s.rewindPositions());
            WireFields.writeString(out, resolver.toSerializationFormat(s.replyTo()), "Step.replyTo");
        }

        @Override
        public StageHost.Step read(Kryo kryo, Input in, Class<? extends StageHost.Step> type) {
            long stepId = in.readVarLong(false);
            int stage = in.readVarInt(true);
            long[] ids = longs(in, "Step.requestIds", MAX_SEGMENTS);
            int[] starts = WireFields.ints(in, "Step.starts", MAX_SEGMENTS);
            int[] lengths = WireFields.ints(in, "Step.lengths", MAX_SEGMENTS);
            int[] reserved = WireFields.ints(in, "Step.reserved", MAX_SEGMENTS);
            int[] tokens = WireFields.ints(in, "Step.tokens", MAX_TOKENS);
            WireTensor activation = in.readBoolean() ? kryo.readObject(in, WireTensor.class) : null;
            long[] forget = longs(in, "Step.forget", MAX_SEGMENTS);
            long[] rewindIds = longs(in, "Step.rewindIds", MAX_SEGMENTS);
            int[] rewindTo = WireFields.ints(in, "Step.rewindPositions", MAX_SEGMENTS);
            ActorRef<StageReply> replyTo = resolver.resolveActorRef(WireFields.requiredString(in, "Step.replyTo"));
            return new StageHost.Step(stepId, stage, ids, starts, lengths, reserved, tokens, activation, forget, rewindIds, rewindTo,
                    replyTo);
        }
    }

    private static final class StepDoneSerializer extends Serializer<StageReply.StepDone> {
        @Override
        public void write(Kryo kryo, Output out, StageReply.StepDone d) {
            out.writeVarLong(d.stepId(), false);
            kryo.writeObject(out, d.values());
        }

        @Override
        public StageReply.StepDone read(Kryo kryo, Input in, Class<? extends StageReply.StepDone> type) {
            return new StageReply.StepDone(in.readVarLong(false), kryo.readObject(in, WireTensor.class));
        }
    }

    private static final class StepFailedSerializer extends Serializer<StageReply.StepFailed> {
        @Override
        public void write(Kryo kryo, Output out, StageReply.StepFailed f) {
            out.writeVarLong(f.stepId(), false);
            out.writeVarInt(f.stage(), true);
            WireFields.writeString(out, f.node(), "StepFailed.node");
            kryo.writeObject(out, f.failure());
        }

        @Override
        public StageReply.StepFailed read(Kryo kryo, Input in, Class<? extends StageReply.StepFailed> type) {
            return new StageReply.StepFailed(in.readVarLong(false), in.readVarInt(true),
                    WireFields.string(in, "StepFailed.node"), kryo.readObject(in, Outcome.Failed.class));
        }
    }

    private static final class ShardStepSerializer extends Serializer<ShardHost.Step> {
        @Override
        public void write(Kryo kryo, Output out, ShardHost.Step s) {
            WireFields.writeString(out, s.group(), "ShardStep.group");
            out.writeVarLong(s.stepId(), false);
            writeLongs(out, s.requestIds());
            writeInts(out, s.starts());
            writeInts(out, s.lengths());
            writeInts(out, s.reserved());
        }

        @Override
        public ShardHost.Step read(Kryo kryo, Input in, Class<? extends ShardHost.Step> type) {
            String group = readGroup(in, "ShardStep.group");
            long stepId = in.readVarLong(false);
            long[] ids = longs(in, "ShardStep.requestIds", MAX_SEGMENTS);
            int[] starts = WireFields.ints(in, "ShardStep.starts", MAX_SEGMENTS);
            int[] lengths = WireFields.ints(in, "ShardStep.lengths", MAX_SEGMENTS);
            int[] reserved = WireFields.ints(in, "ShardStep.reserved", MAX_SEGMENTS);
            long rows = 0;
            for (int l : lengths) {
                rows += l;
            }
            if (rows > MAX_TOKENS) {
                throw new WireFormatException("ShardStep.lengths: a shard step of " + rows + " rows; expected at most " + MAX_TOKENS);
            }
            try {
                return new ShardHost.Step(group, stepId, ids, starts, lengths, reserved);
            } catch (IllegalArgumentException e) {
                throw new WireFormatException("ShardStep: " + e.getMessage());
            }
        }
    }

    private static final class ShardRewindSerializer extends Serializer<ShardHost.Rewind> {
        @Override
        public void write(Kryo kryo, Output out, ShardHost.Rewind r) {
            out.writeVarLong(r.requestId(), false);
            out.writeVarInt(r.position(), true);
        }

        @Override
        public ShardHost.Rewind read(Kryo kryo, Input in, Class<? extends ShardHost.Rewind> type) {
            return new ShardHost.Rewind(in.readVarLong(false), in.readVarInt(true));
        }
    }

    private static final class ShardForgetSerializer extends Serializer<ShardHost.Forget> {
        @Override
        public void write(Kryo kryo, Output out, ShardHost.Forget f) {
            out.writeVarLong(f.requestId(), false);
        }

        @Override
        public ShardHost.Forget read(Kryo kryo, Input in, Class<? extends ShardHost.Forget> type) {
            return new ShardHost.Forget(in.readVarLong(false));
        }
    }

    /** A collective group's name: present and at most 256 characters. */
    private static String readGroup(Input in, String field) {
        String group = WireFields.requiredString(in, field);
        if (group.length() > 256) {
            throw new WireFormatException(field + ": a collective group name of " + group.length()
                    + " characters; expected 1 to 256 characters");
        }
        return group;
    }

    private static final class ShardReformSerializer extends Serializer<ShardHost.Reform> {
        private final ActorRefResolver resolver;

        ShardReformSerializer(ActorRefResolver resolver) {
            this.resolver = resolver;
        }

        @Override
        public void write(Kryo kryo, Output out, ShardHost.Reform r) {
            WireFields.writeString(out, r.group(), "Reform.group");
            WireFields.writeString(out, resolver.toSerializationFormat(r.replyTo()), "Reform.replyTo");
        }

        @Override
        public ShardHost.Reform read(Kryo kryo, Input in, Class<? extends ShardHost.Reform> type) {
            String group = readGroup(in, "Reform.group");
            return new ShardHost.Reform(group, resolver.resolveActorRef(WireFields.requiredString(in, "Reform.replyTo")));
        }
    }

    private static final class ShardReformedSerializer extends Serializer<ShardHost.Reformed> {
        @Override
        public void write(Kryo kryo, Output out, ShardHost.Reformed r) {
            WireFields.writeString(out, r.group(), "Reformed.group");
            out.writeVarInt(r.shard(), true);
        }

        @Override
        public ShardHost.Reformed read(Kryo kryo, Input in, Class<? extends ShardHost.Reformed> type) {
            return new ShardHost.Reformed(readGroup(in, "Reformed.group"), in.readVarInt(true));
        }
    }

    private static final class ShardReformFailedSerializer extends Serializer<ShardHost.ReformFailed> {
        @Override
        public void write(Kryo kryo, Output out, ShardHost.ReformFailed r) {
            WireFields.writeString(out, r.group(), "ReformFailed.group");
            out.writeVarInt(r.shard(), true);
            WireFields.writeText(out, r.reason(), "ReformFailed.reason");
        }

        @Override
        public ShardHost.ReformFailed read(Kryo kryo, Input in, Class<? extends ShardHost.ReformFailed> type) {
            String group = readGroup(in, "ReformFailed.group");
            int shard = in.readVarInt(true);
            String reason = WireFields.string(in, "ReformFailed.reason");
            return new ShardHost.ReformFailed(group, shard, reason == null ? "no reason given" : reason);
        }
    }
}
