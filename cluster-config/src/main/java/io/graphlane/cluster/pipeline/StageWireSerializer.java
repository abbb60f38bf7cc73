package io.graphlane.cluster.pipeline;

import com.esotericsoftware.kryo.Kryo;
import com.esotericsoftware.kryo.Serializer;
import com.esotericsoftware.kryo.io.Input;
import com.esotericsoftware.kryo.io.Output;
import io.graphlane.actors.wire.ActivationFrame;
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
 * truncated or with trailing bytes is refused with a logged {@link WireFormatException}; the node stays up.
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
            out.writeString(resolver.toSerializationFormat(ref));
        }
    }

    private static <T> List<ActorRef<T>> readRefs(Input in, ActorRefResolver resolver) {
        int n = in.readVarInt(true);
        if (n > 1024) {
            throw new WireFormatException("stage route of " + n + " hosts; expected at most 1024");
        }
        List<ActorRef<T>> refs = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
            refs.add(resolver.resolveActorRef(in.readString()));
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
            out.writeString(resolver.toSerializationFormat(r.engine()));
        }

        @Override
        public StageHost.Run read(Kryo kryo, Input in, Class<? extends StageHost.Run> type) {
            long request = in.readVarLong(false);
            long step = in.readVarLong(true);
            int stage = in.readVarInt(true);
            int count = in.readVarInt(true);
            if (count > 1 << 20) {
                throw new WireFormatException("stage step of " + count + " tokens; expected at most " + (1 << 20));
            }
            int[] tokens = in.readInts(count, true);
            int start = in.readVarInt(true);
            ActivationFrame input = in.readBoolean() ? kryo.readObject(in, ActivationFrame.class) : null;
            List<ActorRef<StageHost.Command>> route = readRefs(in, resolver);
            ActorRef<StageReply> engine = resolver.resolveActorRef(in.readString());
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
            out.writeString(p.rootNode());
            kryo.writeObject(out, p.producer());
            kryo.writeObject(out, p.failure());
            writeRefs(out, resolver, p.downstream());
            out.writeString(resolver.toSerializationFormat(p.engine()));
        }

        @Override
        public StageHost.Poisoned read(Kryo kryo, Input in, Class<? extends StageHost.Poisoned> type) {
            long request = in.readVarLong(false);
            long step = in.readVarLong(true);
            int stage = in.readVarInt(true);
            String node = in.readString();
            CompletionHandle producer = kryo.readObject(in, CompletionHandle.class);
            Outcome.Failed failure = kryo.readObject(in, Outcome.Failed.class);
            List<ActorRef<StageHost.Command>> route = readRefs(in, resolver);
            ActorRef<StageReply> engine = resolver.resolveActorRef(in.readString());
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
            out.writeString(f.node());
            kryo.writeObject(out, f.failure());
        }

        @Override
        public StageReply.StepFailed read(Kryo kryo, Input in, Class<? extends StageReply.StepFailed> type) {
            return new StageReply.StepFailed(in.readVarLong(false), in.readVarLong(true), in.readVarInt(true), in.readString(),
                    kryo.readObject(in, Outcome.Failed.class));
        }
    }

    private static final class ShardStepSerializer extends Serializer<ShardHost.Step> {
        @Override
        public void write(Kryo kryo, Output out, ShardHost.Step s) {
            out.writeString(s.group());
            out.writeVarLong(s.requestId(), false);
            out.writeVarLong(s.step(), true);
            out.writeVarInt(s.startPosition(), true);
            out.writeVarInt(s.rows(), true);
        }

        @Override
        public ShardHost.Step read(Kryo kryo, Input in, Class<? extends ShardHost.Step> type) {
            String group = readGroup(in);
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
    private static String readGroup(Input in) {
        String group = in.readString();
        if (group == null || group.length() > 256) {
            throw new WireFormatException("collective group name " + (group == null ? "missing" : "of " + group.length()
                    + " characters") + "; expected 1 to 256 characters");
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
            out.writeString(r.group());
            out.writeString(resolver.toSerializationFormat(r.replyTo()));
        }

        @Override
        public ShardHost.Reform read(Kryo kryo, Input in, Class<? extends ShardHost.Reform> type) {
            String group = readGroup(in);
            return new ShardHost.Reform(group, resolver.resolveActorRef(in.readString()));
        }
    }

    private static final class ShardReformedSerializer extends Serializer<ShardHost.Reformed> {
        @Override
        public void write(Kryo kryo, Output out, ShardHost.Reformed r) {
            out.writeString(r.group());
            out.writeVarInt(r.shard(), true);
        }

        @Override
        public ShardHost.Reformed read(Kryo kryo, Input in, Class<? extends ShardHost.Reformed> type) {
            return new ShardHost.Reformed(readGroup(in), in.readVarInt(true));
        }
    }

    private static final class ShardReformFailedSerializer extends Serializer<ShardHost.ReformFailed> {
        @Override
        public void write(Kryo kryo, Output out, ShardHost.ReformFailed r) {
            out.writeString(r.group());
            out.writeVarInt(r.shard(), true);
            out.writeString(r.reason());
        }

        @Override
        public ShardHost.ReformFailed read(Kryo kryo, Input in, Class<? extends ShardHost.ReformFailed> type) {
            String group = readGroup(in);
            int shard = in.readVarInt(true);
            String reason = in.readString();
            return new ShardHost.ReformFailed(group, shard, reason == null ? "no reason given" : reason);
        }
    }
}
