package io.graphlane.cluster.pipeline;

import io.graphlane.actors.wire.WireTensor;
import io.graphlane.core.completion.SettableCompletion;
import io.graphlane.inference.api.GenerationRefusedException;
import io.graphlane.scheduler.pipeline.MicroBatch;
import java.util.Comparator;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.pekko.actor.Address;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.PostStop;
import org.apache.pekko.actor.typed.SupervisorStrategy;
import org.apache.pekko.actor.typed.javadsl.AbstractBehavior;
import org.apache.pekko.actor.typed.javadsl.ActorContext;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.actor.typed.javadsl.Receive;
import org.apache.pekko.actor.typed.receptionist.Receptionist;
import org.apache.pekko.cluster.ClusterEvent;
import org.apache.pekko.cluster.typed.Cluster;
import org.apache.pekko.cluster.typed.Subscribe;

/**
 * Where the proxy lanes of the serving node send their steps: one actor that knows the host of every stage (from the
 * Receptionist, reachable ones only), sends each step to its stage's host as one {@link StageHost.Step} with the KV-cache
 * changes waiting for that stage, and completes the step's completion when the host answers (filling the output slot
 * first) or fails it. Steps of one stage reach this actor in their link's order and leave in that order, so the host
 * runs them, and applies the changes they carry, in the engine's order.
 *
 * <p>When a node hosting a stage becomes unreachable or leaves, every step sent to it and not answered fails at once
 * with a {@link GenerationRefusedException} (UNAVAILABLE) naming the node and the stage, and each later step of that
 * stage fails the same way until a reachable host is listed again; {@code unavailable} says why meanwhile (the
 * serving node refuses new requests, {@code /health} answers 503). A restarted node registers anew.
 */
final class StageDirectory extends AbstractBehavior<StageDirectory.Command> {

    /** What the directory accepts. */
    sealed interface Command permits Send, Replied, HostsListed, ReachabilityChanged, MemberChanged, FailAll, Stop {
    }

    /** Stops the directory; a step still unanswered fails. */
    record Stop() implements Command {
    }

    /** Send {@code work} to its stage's host; {@code done} completes with the host's answer. */
    record Send(RemoteStageProgram.Work work, SettableCompletion done) implements Command {
    }

    /** Fails every step not answered yet with {@code cause} (the pipeline is closing). */
    record FailAll(Throwable cause) implements Command {
    }

    record Replied(StageReply reply) implements Command {
    }

    record HostsListed(int stage, Receptionist.Listing listing) implements Command {
    }

    record ReachabilityChanged(ClusterEvent.ReachabilityEvent event) implements Command {
    }

    record MemberChanged(ClusterEvent.MemberEvent event) implements Command {
    }

    /** A step sent and not answered yet. */
    private record Outstanding(RemoteStageProgram.Work work, SettableCompletion done, ActorRef<StageHost.Command> host) {
    }

    private final int stageCount;
    private final RemoteStageProgram program;
    private final AtomicReference<String> unavailable;
    private final ActorRef<StageReply> replies;
    private final String self;
    /** The host of each stage (reachable, as the Receptionist lists it), or absent. */
    private final Map<Integer, ActorRef<StageHost.Command>> hosts = new HashMap<>();
    /** Why each stage without a host has none. */
    private final Map<Integer, String> lost = new HashMap<>();
    private final Map<Long, Outstanding> outstanding = new HashMap<>();
    private long nextStep;

    private StageDirectory(ActorContext<Command> context, RemoteStageProgram program, AtomicReference<String> unavailable) {
        super(context);
        this.stageCount = program.stageCount();
        this.program = program;
        this.unavailable = unavailable;
        this.replies = context.messageAdapter(StageReply.class, Replied::new);
        Cluster cluster = Cluster.get(context.getSystem());
        this.self = cluster.selfMember().address().toString();
        // One adapter per message class (a later one replaces an earlier): the listing's key names its stage.
        ActorRef<Receptionist.Listing> listings = context.messageAdapter(Receptionist.Listing.class,
                listing -> new HostsListed(Integer.parseInt(listing.getKey().id().substring(StageKeys.HOST_PREFIX.length())), listing));
        for (int s = 0; s < stageCount; s++) {
            lost.put(s, "no node hosts stage " + s + " yet");
            context.getSystem().receptionist().tell(Receptionist.subscribe(StageKeys.host(s), listings));
        }
        cluster.subscriptions().tell(Subscribe.create(
                context.messageAdapter(ClusterEvent.ReachabilityEvent.class, ReachabilityChanged::new),
                ClusterEvent.ReachabilityEvent.class));
        cluster.subscriptions().tell(Subscribe.create(
                context.messageAdapter(ClusterEvent.MemberEvent.class, MemberChanged::new), ClusterEvent.MemberEvent.class));
        publishAvailability();
    }

    /**
     * The directory of {@code program}'s stages; {@code unavailable} holds why new requests are refused (null while every
     * stage has a reachable host). It runs supervised: a failure of its own stops it with the failure logged, and the
     * pipeline is then unavailable.
     */
    static Behavior<Command> create(RemoteStageProgram program, AtomicReference<String> unavailable) {
        return Behaviors.supervise(Behaviors.<Command>setup(ctx -> new StageDirectory(ctx, program, unavailable)))
                .onFailure(SupervisorStrategy.stop().withLoggingEnabled(true));
    }

    @Override
    public Receive<Command> createReceive() {
        return newReceiveBuilder()
                .onMessage(Send.class, this::onSend)
                .onMessage(Replied.class, this::onReplied)
                .onMessage(HostsListed.class, this::onHostsListed)
                .onMessage(ReachabilityChanged.class, this::onReachability)
                .onMessage(MemberChanged.class, this::onMember)
                .onMessage(FailAll.class, this::onFailAll)
                .onMessage(Stop.class, stop -> Behaviors.stopped())
                .onSignal(PostStop.class, signal -> onPostStop())
                .build();
    }

    private Behavior<Command> onSend(Send send) {
        RemoteStageProgram.Work work = send.work();
        int stage = work.stage();
        List<RemoteStageProgram.Change> changes = program.takeChanges(stage);
        ActorRef<StageHost.Command> host = hosts.get(stage);
        if (host == null) {
            send.done().fail(new GenerationRefusedException(GenerationRefusedException.Reason.UNAVAILABLE,
                    "requests " + requestIds(work.batch()) + " lost stage " + stage + ": " + lost.get(stage)));
            return this;
        }
        MicroBatch batch = work.batch();
        int n = batch.entries().size();
        long[] ids = new long[n];
        int[] starts = new int[n];
        int[] lengths = new int[n];
        for (int i = 0; i < n; i++) {
            MicroBatch.Entry e = batch.entries().get(i);
            ids[i] = e.requestId();
            starts[i] = e.startPosition();
            lengths[i] = e.tokens().length;
        }
        int[] tokens = new int[0];
        WireTensor activation = null;
        if (stage == 0) {
            tokens = new int[batch.positionCount()];
            int at = 0;
            for (MicroBatch.Entry e : batch.entries()) {
                System.arraycopy(e.tokens(), 0, tokens, at, e.tokens().length);
                at += e.tokens().length;
            }
        } else {
            activation = work.input().values();
        }
        int forgets = 0;
        for (RemoteStageProgram.Change c : changes) {
            forgets += c.forget() ? 1 : 0;
        }
        long[] forget = new long[forgets];
        long[] rewindIds = new long[changes.size() - forgets];
        int[] rewindTo = new int[rewindIds.length];
        int f = 0;
        int r = 0;
        for (RemoteStageProgram.Change c : changes) {
            if (c.forget()) {
                forget[f++] = c.requestId();
            } else {
                rewindIds[r] = c.requestId();
                rewindTo[r++] = c.position();
            }
        }
        long stepId = ++nextStep;
        outstanding.put(stepId, new Outstanding(work, send.done(), host));
        host.tell(new StageHost.Step(stepId, stage, ids, starts, lengths, tokens, activation, forget, rewindIds, rewindTo, replies));
        return this;
    }

    private Behavior<Command> onReplied(Replied replied) {
        StageReply reply = replied.reply();
        Outstanding o = outstanding.remove(reply.stepId());
        if (o == null) {
            return this; // failed already: its host was lost
        }
        if (reply instanceof StageReply.StepDone done) {
            o.work().output().fill(done.values());
            o.done().succeed();
        } else if (reply instanceof StageReply.StepFailed failed) {
            o.done().fail(new StageFailedException(requestIds(o.work().batch()), failed.stage(), failed.node(),
                    failed.failure().cause()));
        }
        return this;
    }

    private Behavior<Command> onHostsListed(HostsListed listed) {
        int stage = listed.stage();
        Optional<ActorRef<StageHost.Command>> chosen = listed.listing().getServiceInstances(StageKeys.host(stage)).stream()
                .min(Comparator.comparing(ref -> ref.path().toString()));
        ActorRef<StageHost.Command> before = hosts.get(stage);
        if (chosen.isPresent()) {
            hosts.put(stage, chosen.get());
            if (lost.remove(stage) != null) {
                getContext().getLog().info("stage {} is hosted by {}", stage, chosen.get().path());
            }
        } else if (before != null) {
            stageLost(stage, before, "node " + before.path().address() + " hosting stage " + stage
                    + " is no longer listed as a reachable host");
        }
        publishAvailability();
        return this;
    }

    private Behavior<Command> onReachability(ReachabilityChanged changed) {
        if (changed.event() instanceof ClusterEvent.UnreachableMember u) {
            nodeLost(u.member().address(), "is unreachable");
        }
        return this;
    }

    private Behavior<Command> onMember(MemberChanged changed) {
        ClusterEvent.MemberEvent e = changed.event();
        if (e instanceof ClusterEvent.MemberRemoved || e instanceof ClusterEvent.MemberExited
                || e instanceof ClusterEvent.MemberLeft || e instanceof ClusterEvent.MemberDowned) {
            nodeLost(e.member().address(), "left the cluster (" + e.member().status() + ")");
        }
        return this;
    }

    private void nodeLost(Address address, String how) {
        for (int s = 0; s < stageCount; s++) {
            ActorRef<StageHost.Command> host = hosts.get(s);
            if (host != null && address.equals(host.path().address())) {
                stageLost(s, host, "node " + address + " hosting stage " + s + " " + how);
            }
        }
        publishAvailability();
    }

    /** Stage {@code stage} has no host: the steps sent to {@code host} fail at once, and so does every later one of the stage. */
    private void stageLost(int stage, ActorRef<StageHost.Command> host, String why) {
        hosts.remove(stage);
        lost.put(stage, why);
        // Refuse new requests before failing the held ones: a caller that retries at once must see the loss.
        publishAvailability();
        int failed = 0;
        for (Iterator<Outstanding> it = outstanding.values().iterator(); it.hasNext(); ) {
            Outstanding o = it.next();
            if (o.host().equals(host)) {
                it.remove();
                failed++;
                o.done().fail(new GenerationRefusedException(GenerationRefusedException.Reason.UNAVAILABLE,
                        "requests " + requestIds(o.work().batch()) + " lost stage " + stage + ": " + why));
            }
        }
        getContext().getLog().warn("{}; {} steps in flight there failed", why, failed);
    }

    private Behavior<Command> onFailAll(FailAll fail) {
        failOutstanding(fail.cause());
        return this;
    }

    private Behavior<Command> onPostStop() {
        unavailable.set("the stage directory of the pipeline on " + self + " has stopped");
        failOutstanding(new GenerationRefusedException(GenerationRefusedException.Reason.UNAVAILABLE,
                "the stage directory of the pipeline on " + self + " has stopped"));
        return this;
    }

    private void failOutstanding(Throwable cause) {
        List<Outstanding> all = List.copyOf(outstanding.values());
        outstanding.clear();
        all.forEach(o -> o.done().fail(cause));
    }

    private static List<Long> requestIds(MicroBatch batch) {
        return batch.entries().stream().map(MicroBatch.Entry::requestId).toList();
    }

    private String unavailableReason() {
        return lost.isEmpty() ? null : lost.entrySet().stream().min(Map.Entry.comparingByKey()).get().getValue();
    }

    private void publishAvailability() {
        unavailable.set(unavailableReason());
    }
}
