package io.graphlane.cluster.pipeline;

import io.graphlane.inference.api.GenerationRefusedException;
import io.graphlane.scheduler.pipeline.PipelineRequest;
import io.graphlane.scheduler.pipeline.RequestLedger;
import io.graphlane.scheduler.pipeline.TokenListener;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicInteger;
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
 * The engine of a pipeline whose stages run on other nodes: one actor on the serving node that owns every request's
 * lifecycle and sends each request's next step to the host of stage 0 with the route through the hosts of the other
 * stages; the last stage's logits come back as a {@link StageReply.StepDone}, the engine samples, appends the token
 * and sends the next step. Each request has at most one step in flight, so its tokens stay in order; several
 * requests occupy different stages at once. It learns the stage hosts from the Receptionist and watches
 * reachability: when a node hosting a stage becomes unreachable or leaves, every request fails at once with a
 * {@link GenerationRefusedException} (UNAVAILABLE) naming the node and the stage, and new requests are refused until
 * every stage has a reachable host again. The request states, their deadlines, cancels and single ends are kept in a
 * {@link RequestLedger}, as in the engine over local lanes; this engine adds the route through the stage hosts and
 * their availability.
 *
 * <p>It runs supervised: a failure of its own (never a listener's exception, which the ledger keeps to its request)
 * stops it with the failure logged; as it stops, for any reason, it marks the pipeline unavailable and then fails
 * every request it still holds with UNAVAILABLE.
 */
public final class ClusterEngine extends AbstractBehavior<ClusterEngine.Command> {

    /** What the engine accepts. */
    public sealed interface Command permits Admit, Cancel, Stop, Replied, DeadlineReached, HostsListed, ReachabilityChanged,
            MemberChanged {
    }

    /** Starts {@code request} (already counted by admission) as {@code requestId}; its sampling state samples from the last stage's logits. */
    public record Admit(long requestId, PipelineRequest request, TokenListener listener) implements Command {
    }

    /** Cancels a request: it is reported cancelled at once, a step in flight finishes unobserved. */
    public record Cancel(long requestId) implements Command {
    }

    /** Fails every request with {@code cause} and stops. */
    public record Stop(Throwable cause, ActorRef<Stopped> replyTo) implements Command {
    }

    /** The engine has stopped. */
    public record Stopped() {
    }

    record Replied(StageReply reply) implements Command {
    }

    record DeadlineReached(long requestId) implements Command {
    }

    record HostsListed(int stage, Receptionist.Listing listing) implements Command {
    }

    record ReachabilityChanged(ClusterEvent.ReachabilityEvent event) implements Command {
    }

    record MemberChanged(ClusterEvent.MemberEvent event) implements Command {
    }

    private final int stageCount;
    private final AtomicReference<String> unavailable;
    private final ActorRef<StageReply> replies;
    /** The host of each stage (reachable, as the Receptionist lists it), or absent. */
    private final Map<Integer, ActorRef<StageHost.Command>> hosts = new HashMap<>();
    /** Why each stage without a host has none. */
    private final Map<Integer, String> lost = new HashMap<>();
    private final RequestLedger<Command> requests;

    private ClusterEngine(ActorContext<Command> context, TimerScheduler<Command> timers, int stageCount, AtomicInteger held,
                          AtomicReference<String> unavailable) {
        super(context);
        this.stageCount = stageCount;
        this.unavailable = unavailable;
        this.requests = new RequestLedger<>(timers, DeadlineReached::new, held, this::ended);
        this.replies = context.messageAdapter(StageReply.class, Replied::new);
        // One adapter per message class (a later one replaces an earlier): the listing's key names its stage.
        ActorRef<Receptionist.Listing> listings = context.messageAdapter(Receptionist.Listing.class,
                listing -> new HostsListed(Integer.parseInt(listing.getKey().id().substring(StageHostKeys.PREFIX.length())), listing));
        for (int s = 0; s < stageCount; s++) {
            lost.put(s, "no node hosts stage " + s + " yet");
            context.getSystem().receptionist().tell(Receptionist.subscribe(StageHostKeys.stage(s), listings));
        }
        Cluster cluster = Cluster.get(context.getSystem());
        cluster.subscriptions().tell(Subscribe.create(
                context.messageAdapter(ClusterEvent.ReachabilityEvent.class, ReachabilityChanged::new),
                ClusterEvent.ReachabilityEvent.class));
        cluster.subscriptions().tell(Subscribe.create(
                context.messageAdapter(ClusterEvent.MemberEvent.class, MemberChanged::new), ClusterEvent.MemberEvent.class));
        publishAvailability();
    }

    /**
     * The engine of a pipeline of {@code stageCount} stages. {@code held} counts requests held (the caller
     * increments it on admission, the engine decrements it when a request ends); {@code unavailable} holds why new
     * requests are refused (null while every stage has a reachable host).
     */
    public static Behavior<Command> create(int stageCount, AtomicInteger held, AtomicReference<String> unavailable) {
        return Behaviors.supervise(Behaviors.<Command>setup(ctx -> Behaviors.withTimers(timers ->
                        new ClusterEngine(ctx, timers, stageCount, held, unavailable))))
                .onFailure(SupervisorStrategy.stop().withLoggingEnabled(true));
    }

    @Override
    public Receive<Command> createReceive() {
        return newReceiveBuilder()
                .onMessage(Admit.class, this::onAdmit)
                .onMessage(Replied.class, this::onReplied)
                .onMessage(DeadlineReached.class, this::onDeadline)
                .onMessage(HostsListed.class, this::onHostsListed)
                .onMessage(ReachabilityChanged.class, this::onReachability)
                .onMessage(MemberChanged.class, this::onMember)
                .onMessage(Cancel.class, this::onCancel)
                .onMessage(Stop.class, this::onStop)
                .onSignal(PostStop.class, signal -> onPostStop())
                .build();
    }

    private Behavior<Command> onAdmit(Admit admit) {
        RequestLedger.Entry a = requests.admit(admit.requestId(), admit.request(), admit.listener());
        if (a == null) {
            return this;
        }
        String why = unavailableReason();
        if (why != null) {
            requests.fail(a, new GenerationRefusedException(GenerationRefusedException.Reason.UNAVAILABLE,
                    "request " + a.id() + " refused: " + why));
            return this;
        }
        sendStep(a);
        return this;
    }

    private Behavior<Command> onReplied(Replied replied) {
        StageReply reply = replied.reply();
        RequestLedger.Entry a = requests.get(reply.requestId());
        if (a == null || !a.inFlight() || a.stepsSent() != reply.step()) {
            return this; // a stale reply: its request ended, or it answers an earlier step
        }
        if (!requests.stepReturned(a)) {
            return this; // cancelled while the step ran: already reported, now ended
        }
        if (reply instanceof StageReply.StepFailed failed) {
            requests.fail(a, new StageFailedException(a.id(), failed.stage(), failed.node(), failed.failure().cause()));
            return this;
        }
        float[] logits = ((StageReply.StepDone) reply).logits().toFloats();
        if (requests.tokenSampled(a, a.request().sampling().next(logits))) {
            sendStep(a);
        }
        return this;
    }

    private void sendStep(RequestLedger.Entry a) {
        String why = unavailableReason();
        if (why != null) {
            requests.fail(a, new GenerationRefusedException(GenerationRefusedException.Reason.UNAVAILABLE,
                    "request " + a.id() + " failed: " + why));
            return;
        }
        List<ActorRef<StageHost.Command>> route = new ArrayList<>();
        for (int s = 1; s < stageCount; s++) {
            route.add(hosts.get(s));
        }
        long step = requests.stepSent(a);
        hosts.get(0).tell(new StageHost.Run(a.id(), step, 0, a.nextInput(), a.position(), null, route, replies));
    }

    private Behavior<Command> onDeadline(DeadlineReached reached) {
        requests.deadlineReached(reached.requestId());
        return this;
    }

    private Behavior<Command> onHostsListed(HostsListed listed) {
        int stage = listed.stage();
        Optional<ActorRef<StageHost.Command>> chosen = listed.listing().getServiceInstances(StageHostKeys.stage(stage)).stream()
                .min(Comparator.comparing(ref -> ref.path().toString()));
        ActorRef<StageHost.Command> before = hosts.get(stage);
        if (chosen.isPresent()) {
            hosts.put(stage, chosen.get());
            if (lost.remove(stage) != null) {
                getContext().getLog().info("stage {} is hosted by {}", stage, chosen.get().path());
            }
        } else if (before != null) {
            stageLost(stage, "node " + before.path().address() + " hosting stage " + stage + " is no longer listed as a reachable"
                    + " host");
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
                stageLost(s, "node " + address + " hosting stage " + s + " " + how);
            }
        }
        publishAvailability();
    }

    /** Stage {@code stage} has no host: every request fails at once (each one needs every stage for its next token). */
    private void stageLost(int stage, String why) {
        hosts.remove(stage);
        lost.put(stage, why);
        // Refuse new requests before telling the failed ones: a caller that retries at once must see the loss.
        publishAvailability();
        getContext().getLog().warn("{}; failing {} requests", why, requests.size());
        requests.failAll(id -> new GenerationRefusedException(GenerationRefusedException.Reason.UNAVAILABLE,
                "request " + id + " lost stage " + stage + ": " + why));
    }

    private Behavior<Command> onCancel(Cancel cancel) {
        requests.cancel(cancel.requestId());
        return this;
    }

    private Behavior<Command> onStop(Stop stop) {
        requests.failAll(id -> stop.cause());
        stop.replyTo().tell(new Stopped());
        return Behaviors.stopped();
    }

    /** Runs whenever the engine stops: after a {@link Stop} nothing is held any more; after a failure, every request fails here. */
    private Behavior<Command> onPostStop() {
        String why = "the cluster engine " + getContext().getSelf().path().name() + " has stopped";
        unavailable.set(why);
        if (requests.size() > 0) {
            getContext().getLog().error("{} with {} requests held; they fail and new ones are refused", why, requests.size());
            requests.failAll(id -> new GenerationRefusedException(GenerationRefusedException.Reason.UNAVAILABLE, why));
        }
        return this;
    }

    /** What this engine drops when a request ends: its caches on every reachable stage host. */
    private void ended(RequestLedger.Entry a) {
        if (a.stepsSent() > 0) {
            hosts.values().stream().distinct().forEach(h -> h.tell(new StageHost.Forget(a.id())));
        }
    }

    private String unavailableReason() {
        return lost.isEmpty() ? null : lost.entrySet().stream().min(Map.Entry.comparingByKey()).get().getValue();
    }

    private void publishAvailability() {
        unavailable.set(unavailableReason());
    }
}
