package io.graphlane.cluster.pipeline;

import io.graphlane.actors.wire.RemoteFailureException;
import io.graphlane.actors.wire.WireTensor;
import io.graphlane.backend.cpu.collective.MemberLostException;
import io.graphlane.core.completion.SettableCompletion;
import io.graphlane.inference.api.GenerationRefusedException;
import io.graphlane.scheduler.pipeline.MicroBatch;
import java.time.Duration;
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
import org.apache.pekko.actor.typed.javadsl.TimerScheduler;
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
 * serving node refuses new requests, {@code /health} and readiness answer 503). A restarted node registers anew.
 *
 * <p>A host often knows first: a tensor-parallel stage whose shard's node died fails its step at once (the collective
 * meets a lost member) and withdraws, long before the failure detector or the Receptionist's listing reach this node.
 * Such an answer (a lost collective member, or a refusal because the stage cannot run now) fails its step as
 * UNAVAILABLE and makes the stage unavailable at once, until the stage's listing changes (withdrawn, then listed again
 * once it re-formed) or, should that change never be seen, for {@link #SUSPENSION} at most, after which the next step
 * finds out again.
 */
final class StageDirectory extends AbstractBehavior<StageDirectory.Command> {

    /** How long a stage stays unavailable on its host's word alone (see the class comment). */
    static final Duration SUSPENSION = Duration.ofSeconds(5);

    /** What the directory accepts. */
    sealed interface Command permits Send, Replied, HostsListed, ReachabilityChanged, MemberChanged, FailAll, Stop, SuspensionOver {
    }

    /** The suspension {@code generation} of stage {@code stage} has run its time. */
    record SuspensionOver(int stage, long generation) implements Command {
    }

    /** Why a stage is unavailable on its host's word, and which suspension that is. */
    private record Suspension(String why, long generation) {
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
    /** Stages whose listed host said they cannot run now. */
    private final Map<Integer, Suspension> suspended = new HashMap<>();
    private final TimerScheduler<Command> timers;
    private long suspensions;
    private final Map<Long, Outstanding> outstanding = new HashMap<>();
    private long nextStep;

    private StageDirectory(ActorContext<Command> context, TimerScheduler<Command> timers, RemoteStageProgram program,
                           AtomicReference<String> unavailable) {
        super(context);
        this.timers = timers;
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
        return Behaviors.supervise(Behaviors.<Command>setup(ctx -> Behaviors.withTimers(timers ->
                        new StageDirectory(ctx, timers, program, unavailable))))
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
                .onMessage(SuspensionOver.class, this::onSuspensionOver)
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
                    (work.changesOnly() ? "" : "requests " + requestIds(work.batch()) + " lost ") + "stage " + stage + ": "
                            + lost.get(stage)));
            return this;
        }
        MicroBatch batch = work.batch();
        int n = work.changesOnly() ? 0 : batch.entries().size();
        long[] ids = new long[n];
        int[] starts = new int[n];
        int[] lengths = new int[n];
        int[] reserved = new int[n];
        for (int i = 0; i < n; i++) {
            MicroBatch.Entry e = batch.entries().get(i);
            ids[i] = e.requestId();
            starts[i] = e.startPosition();
            lengths[i] = e.tokens().length;
            reserved[i] = e.reservedPositions();
        }
        int[] tokens = new int[0];
        WireTensor activation = null;
        if (!work.changesOnly() && stage == 0) {
            tokens = new int[batch.positionCount()];
            int at = 0;
            for (MicroBatch.Entry e : batch.entries()) {
                System.arraycopy(e.tokens(), 0, tokens, at, e.tokens().length);
                at += e.tokens().length;
            }
        } else if (!work.changesOnly()) {
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
        host.tell(new StageHost.Step(stepId, stage, ids, starts, lengths, reserved, tokens, activation, forget, rewindIds, rewindTo,
                replies));
        return this;
    }

    private Behavior<Command> onReplied(Replied replied) {
        StageReply reply = replied.reply();
        Outstanding o = outstanding.remove(reply.stepId());
        if (o == null) {
            return this; // failed already: its host was lost
        }
        if (reply instanceof StageReply.StepDone done) {
            if (!o.work().changesOnly()) {
                o.work().output().fill(done.values());
            }
            o.done().succeed();
        } else if (reply instanceof StageReply.StepFailed failed) {
            Throwable cause = failed.failure().cause();
            String cannotRun = cannotRunNow(failed.stage(), failed.node(), cause);
            if (cannotRun != null) {
                suspend(failed.stage(), o.host(), cannotRun);
                o.done().fail(new GenerationRefusedException(GenerationRefusedException.Reason.UNAVAILABLE, cannotRun));
            } else {
                o.done().fail(new StageFailedException(o.work().changesOnly() ? List.of() : requestIds(o.work().batch()),
                        failed.stage(), failed.node(), cause));
            }
        }
        return this;
    }

    /**
     * Why stage {@code stage} cannot run now, in words for a client, when {@code cause} (a host's answer, as it crossed
     * the wire or not) says so: a collective member of the stage was lost (a shard's node died), or the host refused the
     * step because the stage is withdrawn or re-forming (the host's own reason, which names its group and failure, is
     * logged, not passed on). Null for any other failure, which is the step's own.
     */
    String cannotRunNow(int stage, String node, Throwable cause) {
        for (Throwable t = cause; t != null; t = t.getCause() == t ? null : t.getCause()) {
            String type = t instanceof RemoteFailureException remote ? remote.originalClass() : t.getClass().getName();
            if (MemberLostException.class.getName().equals(type)) {
                return "a node holding a shard of stage " + stage + " (hosted on " + node + ") left; the stage is unavailable"
                        + " until a node for that shard joins and the stage re-forms";
            }
            if (StageUnavailableException.class.getName().equals(type)) {
                getContext().getLog().info("stage {} on {} refused a step: {}", stage, node,
                        t instanceof RemoteFailureException remote ? remote.originalMessage() : t.getMessage());
                return "stage " + stage + " (hosted on " + node + ") cannot run now: it lost a shard's node or is re-forming;"
                        + " it is unavailable until it has formed again";
            }
        }
        return null;
    }

    /**
     * Stage {@code stage}'s listed {@code host} said it cannot run now: the stage is unavailable from this moment, until
     * its listing changes or {@link #SUSPENSION} passed.
     */
    private void suspend(int stage, ActorRef<StageHost.Command> host, String why) {
        if (!host.equals(hosts.get(stage))) {
            return; // an answer from a host already replaced
        }
        long generation = ++suspensions;
        if (suspended.put(stage, new Suspension(why, generation)) == null) {
            getContext().getLog().warn("stage {} is unavailable: {}", stage, why);
        }
        timers.startSingleTimer(new SuspensionKey(stage), new SuspensionOver(stage, generation), SUSPENSION);
        publishAvailability();
    }

    private Behavior<Command> onSuspensionOver(SuspensionOver over) {
        Suspension s = suspended.get(over.stage());
        if (s != null && s.generation() == over.generation()) {
            suspended.remove(over.stage());
            publishAvailability();
        }
        return this;
    }

    /** The key of one stage's suspension timer. */
    private record SuspensionKey(int stage) {
    }

    private Behavior<Command> onHostsListed(HostsListed listed) {
        int stage = listed.stage();
        // The listing changed: it says now whether the stage has a host, whatever its host said before.
        if (suspended.remove(stage) != null) {
            timers.cancel(new SuspensionKey(stage));
        }
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
        String why = "the serving node " + self + " no longer follows the stage hosts (it is shutting down, or stopped after an"
                + " internal failure)";
        unavailable.set(why);
        failOutstanding(new GenerationRefusedException(GenerationRefusedException.Reason.UNAVAILABLE, why));
        return this;
    }

    private void failOutstanding(Throwable cause) {
        List<Outstanding> all = List.copyOf(outstanding.values());
        outstanding.clear();
        all.forEach(o -> o.done().fail(cause));
    }

    private static List<Long> requestIds(MicroBatch batch) {
        if (batch == null) {
            return List.of();
        }
        return batch.entries().stream().map(MicroBatch.Entry::requestId).toList();
    }

    private String unavailableReason() {
        if (!lost.isEmpty()) {
            return lost.entrySet().stream().min(Map.Entry.comparingByKey()).get().getValue();
        }
        return suspended.isEmpty() ? null : suspended.entrySet().stream().min(Map.Entry.comparingByKey()).get().getValue().why();
    }

    private void publishAvailability() {
        unavailable.set(unavailableReason());
    }
}
