package io.graphlane.cluster.pipeline;

import com.esotericsoftware.kryo.Kryo;
import com.esotericsoftware.kryo.Serializer;
import com.esotericsoftware.kryo.io.Input;
import com.esotericsoftware.kryo.io.Output;
import io.graphlane.actors.wire.ActivationFrame;
import io.graphlane.actors.wire.WireFields;
import io.graphlane.actors.wire.WireFormatException;
import io.graphlane.actors.wire.WireRegistry;
import io.graphlane.actors.wire.WireTensor;
import io.graphlane.core.completion.Outcome;
import io.graphlane.core.graph.CompletionHandle;
import java.util.ArrayList;
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
 * truncated, declaring a field larger than the frame or its cap ({@link WireFields}; a route of at most 1024 hosts, a
 * step of at most 2^20 tokens) or with trailing bytes is refused with a logged {@link WireFormatException}; the node
 * stays up.
 */
public final class StageWireSerializer extends PooledKryoSerializer {
    /** This serializer's Pekko identifier; the same on every node. */
    public static final int IDENTIFIER = 474_202;

    /** The protocol's classes with their fixed ids; never renumbered or reused. */
    static final int RUN_ID = 200;
    static final int POISONED_ID = 201;
    static final int FORGET_ID = 202;
    static final int STEP_DONE_ID = 203;
    static final int STEP_FAILED_ID = 204;
    static final int SHARD_STEP_ID = 205;
    static final int SHARD_FORGET_ID = 206;
    static final int SHARD_REFORM_ID = 207;
    static final int SHARD_REFORMED_ID = 208;
    static final int SHARD_REFORM_FAILED_ID = 209;

    /** The most hosts a route may list, and the most tokens one step may carry. */
    private static final int MAX_ROUTE = 1024;
    private static final int MAX_TOKENS = 1 << 20;

    /** The serializer of {@code system}; Pekko constructs it from pekko.actor.serializers. */
    public StageWireSerializer(ExtendedActorSystem system) {
        super(system);
    }

    /** A Kryo that knows the wire registry's classes and this protocol's, and nothing else. */
    @Override
    protected Kryo newKryo(ActorRefResolver resolver) {
        Kryo kryo = WireRegistry.newKryo(resolver);
        kryo.register(StageHost.Run.class, new RunSerializer(resolver), RUN_ID);
        kryo.register(StageHost.Poisoned.class, new PoisonedSerializer(resolver), POISONED_ID);
        kryo.register(StageHost.Forget.class, new ForgetSerializer(), FORGET_ID);
        kryo.register(StageReply.StepDone.class, new StepDoneSerializer(), STEP_DONE_ID);
        kryo.register(StageReply.StepFailed.class, new StepFailedSerializer(), STEP_FAILED_ID);
        kryo.register(ShardHost.Step.class, new ShardStepSerializer(), SHARD_STEP_ID);
        kryo.register(ShardHost.Forget.class, new ShardForgetSerializer(), SHARD_FORGET_ID);
        kryo.register(ShardHost.Reform.class, new ShardReformSerializer(resolver), SHARD_REFORM_ID);
        kryo.register(ShardHost.Reformed.class, new ShardReformedSerializer(), SHARD_REFORMED_ID);
        kryo.register(ShardHost.ReformFailed.class, new ShardReformFailedSerializer(), SHARD_REFORM_FAILED_ID);
        return kryo;
    }

    @Override
    public int identifier() {
        return IDENTIFIER;
    }

    private static void writeRefs(Output out, ActorRefResolver resolver, List<? extends ActorRef<?>> refs) {
        out.writeVarInt(refs.size(), true);
        for (ActorRef<?> ref : refs) {
            WireFields.writeString(out, resolver.toSerializationFormat(ref), "route");
        }
    }

    private static <T> List<ActorRef<T>> readRefs(Input in, ActorRefResolver resolver, String field) {
        int n = WireFields.count(in, field + ".route", MAX_ROUTE);
        List<ActorRef<T>> refs = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
            refs.add(resolver.resolveActorRef(WireFields.requiredString(in, field + ".route")));
        }
        return refs;
    }

    private static final class RunSerializer extends Serializer<StageHost.Run> {
        private final ActorRefResolver resolver;

        RunSerializer(ActorRefResolver resolver) {
            this.resolver = resolver;
        }

        @Override
        public void write(Kryo kryo, Output out, StageHost.Run r) {
            out.writeVarLong(r.requestId(), false);
            out.writeVarLong(r.step(), true);
            out.writeVarInt(r.stage(), true);
            out.writeVarInt(r.tokens().length, true);
            out.writeInts(r.tokens(), 0, r.tokens().length, true);
            out.writeVarInt(r.startPosition(), true);
            out.writeBoolean(r.input() != null);
            if (r.input() != null) {
                kryo.writeObject(out, r.input());
            }
            writeRefs(out, resolver, r.downstream());
            WireFields.writeString(out, resolver.toSerializationFormat(r.engine()), "Run.engine");
        }

        @Override
        public StageHost.Run read(Kryo kryo, Input in, Class<? extends StageHost.Run> type) {
            long request = in.readVarLong(false);
            long step = in.readVarLong(true);
            int stage = in.readVarInt(true);
            int[] tokens = WireFields.ints(in, "Run.tokens", MAX_TOKENS);
            int start = in.readVarInt(true);
            ActivationFrame input = in.readBoolean() ? kryo.readObject(in, ActivationFrame.class) : null;
            List<ActorRef<StageHost.Command>> route = readRefs(in, resolver, "Run");
            ActorRef<StageReply> engine = resolver.resolveActorRef(WireFields.requiredString(in, "Run.engine"));
            return new StageHost.Run(request, step, stage, tokens, start, input, route, engine);
        }
    }

    private static final class PoisonedSerializer extends Serializer<StageHost.Poisoned> {
        private final ActorRefResolver resolver;

        PoisonedSerializer(ActorRefResolver resolver) {
            this.resolver = resolver;
        }

        @Override
        public void write(Kryo kryo, Output out, StageHost.Poisoned p) {
            out.writeVarLong(p.requestId(), false);
            out.writeVarLong(p.step(), true);
            out.writeVarInt(p.rootStage(), true);
            WireFields.writeString(out, p.rootNode(), "Poisoned.rootNode");
            kryo.writeObject(out, p.producer());
            kryo.writeObject(out, p.failure());
            writeRefs(out, resolver, p.downstream());
            WireFields.writeString(out, resolver.toSerializationFormat(p.engine()), "Poisoned.engine");
        }

        @Override
        public StageHost.Poisoned read(Kryo kryo, Input in, Class<? extends StageHost.Poisoned> type) {
            long request = in.readVarLong(false);
            long step = in.readVarLong(true);
            int stage = in.readVarInt(true);
            String node = WireFields.string(in, "Poisoned.rootNode");
            CompletionHandle producer = kryo.readObject(in, CompletionHandle.class);
            Outcome.Failed failure = kryo.readObject(in, Outcome.Failed.class);
            List<ActorRef<StageHost.Command>> route = readRefs(in, resolver, "Poisoned");
            ActorRef<StageReply> engine = resolver.resolveActorRef(WireFields.requiredString(in, "Poisoned.engine"));
            return new StageHost.Poisoned(request, step, stage, node, producer, failure, route, engine);
        }
    }

    private static final class ForgetSerializer extends Serializer<StageHost.Forget> {
        @Override
        public void write(Kryo kryo, Output out, StageHost.Forget f) {
            out.writeVarLong(f.requestId(), false);
        }

        @Override
        public StageHost.Forget read(Kryo kryo, Input in, Class<? extends StageHost.Forget> type) {
            return new StageHost.Forget(in.readVarLong(false));
        }
    }

    private static final class StepDoneSerializer extends Serializer<StageReply.StepDone> {
        @Override
        public void write(Kryo kryo, Output out, StageReply.StepDone d) {
            out.writeVarLong(d.requestId(), false);
            out.writeVarLong(d.step(), true);
            kryo.writeObject(out, d.logits());
        }

        @Override
        public StageReply.StepDone read(Kryo kryo, Input in, Class<? extends StageReply.StepDone> type) {
            return new StageReply.StepDone(in.readVarLong(false), in.readVarLong(true), kryo.readObject(in, WireTensor.class));
        }
    }

    private static final class StepFailedSerializer extends Serializer<StageReply.StepFailed> {
        @Override
        public void write(Kryo kryo, Output out, StageReply.StepFailed f) {
            out.writeVarLong(f.requestId(), false);
            out.writeVarLong(f.step(), true);
            out.writeVarInt(f.stage(), true);
            WireFields.writeString(out, f.node(), "StepFailed.node");
            kryo.writeObject(out, f.failure());
        }

        @Override
        public StageReply.StepFailed read(Kryo kryo, Input in, Class<? extends StageReply.StepFailed> type) {
            return new StageReply.StepFailed(in.readVarLong(false), in.readVarLong(true), in.readVarInt(true),
                    WireFields.string(in, "StepFailed.node"), kryo.readObject(in, Outcome.Failed.class));
        }
    }

    private static final class ShardStepSerializer extends Serializer<ShardHost.Step> {
        @Override
        public void write(Kryo kryo, Output out, ShardHost.Step s) {
            WireFields.writeString(out, s.group(), "ShardStep.group");
            out.writeVarLong(s.requestId(), false);
            out.writeVarLong(s.step(), true);
            out.writeVarInt(s.startPosition(), true);
            out.writeVarInt(s.rows(), true);
        }

        @Override
        public ShardHost.Step read(Kryo kryo, Input in, Class<? extends ShardHost.Step> type) {
            String group = readGroup(in, "ShardStep.group");
            long request = in.readVarLong(false);
            long step = in.readVarLong(true);
            int start = in.readVarInt(true);
            int rows = in.readVarInt(true);
            if (rows < 1 || rows > 1 << 20) {
                throw new WireFormatException("shard step of " + rows + " rows; expected 1 to " + (1 << 20));
            }
            return new ShardHost.Step(group, request, step, start, rows);
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
