package io.graphlane.cluster.collective;

import io.graphlane.backend.cpu.collective.CollectiveMessage;
import io.graphlane.backend.cpu.collective.CollectiveTransport.Envelope;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import org.apache.pekko.actor.Address;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.PostStop;
import org.apache.pekko.actor.typed.Terminated;
import org.apache.pekko.actor.typed.javadsl.AbstractBehavior;
import org.apache.pekko.actor.typed.javadsl.ActorContext;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.actor.typed.javadsl.Receive;
import org.apache.pekko.actor.typed.javadsl.TimerScheduler;
import org.apache.pekko.actor.typed.receptionist.Receptionist;
import org.apache.pekko.actor.typed.receptionist.ServiceKey;
import org.apache.pekko.cluster.ClusterEvent;
import org.apache.pekko.cluster.typed.Cluster;
import org.apache.pekko.cluster.typed.Subscribe;

/**
 * The actor of one rank of one collective group on its node (the node side of a {@link ClusterCollectiveTransport}).
 * It registers under the group's {@link ServiceKey}, greets every other rank it finds there ({@link Hello}), and
 * completes the join once it knows all of them. Then it carries the member's messages: outgoing ones leave in send
 * order per peer, payload chunks only while the peer has granted credit (at most a window of chunks in flight per
 * peer, so Artery's bounded queues never overflow and drop one); incoming ones go into the member's inbox.
 *
 * <p>Loss: it watches every peer's rank actor and the cluster's membership and reachability; a peer that stops, whose
 * node becomes unreachable, leaves or is removed is reported once, as a {@link CollectiveMessage.Left} naming its rank,
 * into the member's inbox, so the collective under way (or the next one) fails on this member. A peer that said
 * {@link Goodbye} closed its transport in order and is not reported.
 */
final class CollectiveRankActor extends AbstractBehavior<CollectiveRankActor.Command> {

    /** Everything the rank actor handles. */
    sealed interface Command {
    }

    /** Wire: rank {@code rank} of {@code group} ({@code size} ranks) is {@code rankActor}; credits for it go to {@code credits}. */
    record Hello(String group, int rank, int size, ActorRef<Command> rankActor, ActorRef<Command> credits) implements Command {
    }

    /** Wire: a collective message from rank {@code from}. */
    record Deliver(int from, CollectiveMessage message) implements Command {
    }

    /** Wire: rank {@code from}'s member consumed {@code chunks} more payload chunks of the receiver's. */
    record Credit(int from, int chunks) implements Command {
    }

    /** Wire: rank {@code from} closed its transport; everything it sent before is delivered. */
    record Goodbye(int from) implements Command {
    }

    /** Wire: rank {@code from} received the receiver's {@link Goodbye}. */
    record GoodbyeAck(int from) implements Command {
    }

    /** Local: the member sends {@code message} (its floats already copied) to rank {@code to}. */
    record Send(int to, CollectiveMessage message) implements Command {
    }

    /** Local: the close of the transport; {@code done} completes once every live peer acknowledged, or at the deadline. */
    record Close(CompletableFuture<Void> done) implements Command {
    }

    private record Listed(Receptionist.Listing listing) implements Command {
    }

    private record MemberChanged(ClusterEvent.MemberEvent event) implements Command {
    }

    private record ReachabilityChanged(ClusterEvent.ReachabilityEvent event) implements Command {
    }

    private enum Deadline implements Command {
        JOIN, CLOSE
    }

    /** How the rank actor is set up. */
    record Setup(String group, int rank, int size, int window, Duration joinTimeout, Duration closeTimeout,
                 BlockingQueue<Envelope> inbox, CompletableFuture<List<ActorRef<Command>>> joined) {
    }

    private final Setup setup;
    private final ServiceKey<Command> key;
    private final ActorRef<Command> credits;
    private final TimerScheduler<Command> timers;
    private final List<ActorRef<Command>> peers;
    private final List<ActorRef<Command>> peerCredits;
    private final List<ArrayDeque<Command>> outbox;
    private final int[] creditLeft;
    private final boolean[] lost;
    private final boolean[] departed;
    private final boolean[] acked;
    private final Set<ActorRef<Command>> greeted = new HashSet<>();
    private boolean joined;
    private CompletableFuture<Void> closing;

    private CollectiveRankActor(ActorContext<Command> context, TimerScheduler<Command> timers, Setup setup) {
        super(context);
        this.setup = setup;
        this.timers = timers;
        this.key = ClusterCollectives.serviceKey(setup.group());
        int n = setup.size();
        peers = new ArrayList<>(n);
        peerCredits = new ArrayList<>(n);
        outbox = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
            peers.add(null);
            peerCredits.add(null);
            outbox.add(new ArrayDeque<>());
        }
        creditLeft = new int[n];
        Arrays.fill(creditLeft, setup.window());
        lost = new boolean[n];
        departed = new boolean[n];
        acked = new boolean[n];
        peers.set(setup.rank(), context.getSelf());
        ActorRef<Command> self = context.getSelf();
        // Credits travel apart from the chunks: this child's path is not a large-message destination, so a grant is
        // never queued behind payload going the same way.
        credits = context.spawn(Behaviors.<Command>receiveMessage(m -> {
            self.tell(m);
            return Behaviors.same();
        }), "credits");
        peerCredits.set(setup.rank(), credits);
        if (n == 1) {
            completeJoin();
            return;
        }
        context.getSystem().receptionist().tell(Receptionist.register(key, self));
        context.getSystem().receptionist().tell(Receptionist.subscribe(key, context.messageAdapter(Receptionist.Listing.class, Listed::new)));
        Cluster cluster = Cluster.get(context.getSystem());
        cluster.subscriptions().tell(Subscribe.create(context.messageAdapter(ClusterEvent.MemberEvent.class, MemberChanged::new),
                ClusterEvent.MemberEvent.class));
        cluster.subscriptions().tell(Subscribe.create(context.messageAdapter(ClusterEvent.ReachabilityEvent.class, ReachabilityChanged::new),
                ClusterEvent.ReachabilityEvent.class));
        timers.startSingleTimer(Deadline.JOIN, Deadline.JOIN, setup.joinTimeout());
    }

    static Behavior<Command> create(Setup setup) {
        return Behaviors.setup(context -> Behaviors.withTimers(timers -> new CollectiveRankActor(context, timers, setup)));
    }

    @Override
    public Receive<Command> createReceive() {
        return newReceiveBuilder()
                .onMessage(Send.class, this::onSend)
                .onMessage(Deliver.class, this::onDeliver)
                .onMessage(Credit.class, this::onCredit)
                .onMessage(Listed.class, this::onListed)
                .onMessage(Hello.class, this::onHello)
                .onMessage(Goodbye.class, this::onGoodbye)
                .onMessage(GoodbyeAck.class, this::onGoodbyeAck)
                .onMessage(Close.class, this::onClose)
                .onMessage(MemberChanged.class, this::onMember)
                .onMessage(ReachabilityChanged.class, this::onReachability)
                .onMessageEquals(Deadline.JOIN, this::onJoinDeadline)
                .onMessageEquals(Deadline.CLOSE, this::onCloseDeadline)
                .onSignal(Terminated.class, this::onTerminated)
                .onSignal(PostStop.class, this::onPostStop)
                .build();
    }

    // ------------------------------------------------------------------ payload

    private Behavior<Command> onSend(Send send) {
        if (!lost[send.to()]) {
            outbox.get(send.to()).add(new Deliver(setup.rank(), send.message()));
            drain(send.to());
        }
        return this;
    }

    private Behavior<Command> onDeliver(Deliver deliver) {
        if (!isPeer(deliver.from(), deliver)) {
            return this;
        }
        setup.inbox().add(new Envelope(deliver.from(), deliver.message()));
        return this;
    }

    private Behavior<Command> onCredit(Credit credit) {
        if (!isPeer(credit.from(), credit)) {
            return this;
        }
        creditLeft[credit.from()] += credit.chunks();
        drain(credit.from());
        return this;
    }

    /** True if {@code rank} names another rank of the group; a message claiming anything else is logged and dropped. */
    private boolean isPeer(int rank, Command message) {
        if (rank >= 0 && rank < setup.size() && rank != setup.rank()) {
            return true;
        }
        getContext().getLog().warn("collective group {} rank {}: dropped {} from rank {}, not another rank of 0..{}", setup.group(),
                setup.rank(), message.getClass().getSimpleName(), rank, setup.size() - 1);
        return false;
    }

    /** Hands rank {@code to} what waits for it, in order, chunks only while it has credit. */
    private void drain(int to) {
        ActorRef<Command> peer = peers.get(to);
        ArrayDeque<Command> queue = outbox.get(to);
        if (peer == null) {
            return;
        }
        while (!queue.isEmpty()) {
            boolean chunk = queue.peek() instanceof Deliver d && d.message() instanceof CollectiveMessage.Chunk;
            if (chunk && creditLeft[to] == 0) {
                return;
            }
            if (chunk) {
                creditLeft[to]--;
            }
            peer.tell(queue.poll());
        }
    }

    // ------------------------------------------------------------------ join

    private Behavior<Command> onListed(Listed listed) {
        for (ActorRef<Command> ref : listed.listing().getServiceInstances(key)) {
            if (!ref.equals(getContext().getSelf()) && greeted.add(ref)) {
                ref.tell(hello());
            }
        }
        return this;
    }

    private Hello hello() {
        return new Hello(setup.group(), setup.rank(), setup.size(), getContext().getSelf(), credits);
    }

    private Behavior<Command> onHello(Hello hello) {
        String where = hello.rankActor().path().address().toString();
        if (hello.size() != setup.size()) {
            return joinFailed("rank " + hello.rank() + " on " + where + " was told the group has " + hello.size()
                    + " ranks, this rank was told " + setup.size());
        }
        if (hello.rank() < 0 || hello.rank() >= setup.size()) {
            return joinFailed("a member on " + where + " claims rank " + hello.rank() + ", outside [0, " + setup.size() + ")");
        }
        ActorRef<Command> known = peers.get(hello.rank());
        if (known != null && !known.equals(hello.rankActor())) {
            return joinFailed("rank " + hello.rank() + " is claimed both by " + known.path().address() + " and by " + where);
        }
        if (known == null) {
            peers.set(hello.rank(), hello.rankActor());
            peerCredits.set(hello.rank(), hello.credits());
            getContext().watch(hello.rankActor());
        }
        if (greeted.add(hello.rankActor())) {
            hello.rankActor().tell(hello());
        }
        drain(hello.rank());
        if (!joined && !peers.contains(null)) {
            completeJoin();
        }
        return this;
    }

    private void completeJoin() {
        joined = true;
        timers.cancel(Deadline.JOIN);
        setup.joined().complete(List.copyOf(peerCredits));
    }

    private Behavior<Command> onJoinDeadline() {
        if (joined) {
            return this;
        }
        List<Integer> missing = new ArrayList<>();
        for (int r = 0; r < setup.size(); r++) {
            if (peers.get(r) == null) {
                missing.add(r);
            }
        }
        return joinFailed("ranks " + missing + " did not join within " + setup.joinTimeout()
                + " (check that every rank joins the group with the same name and size and that their nodes are members of this cluster)");
    }

    private Behavior<Command> joinFailed(String why) {
        if (joined) {
            getContext().getLog().warn("collective group {} rank {}: ignoring a late join problem: {}", setup.group(), setup.rank(), why);
            return this;
        }
        setup.joined().completeExceptionally(new ClusterCollectiveException("collective group " + setup.group() + ", rank "
                + setup.rank() + ": cannot join: " + why));
        return Behaviors.stopped();
    }

    // ------------------------------------------------------------------ loss

    private Behavior<Command> onTerminated(Terminated terminated) {
        int r = peers.indexOf(terminated.getRef());
        if (r >= 0 && departed[r]) {
            // It left in order and may have stopped before this rank's goodbye reached it: nothing more can come.
            acked[r] = true;
        } else if (r >= 0) {
            peerLost(r, "its rank actor on " + terminated.getRef().path().address() + " stopped (its node left or its transport stopped)");
        }
        return finishCloseIfDone();
    }

    private Behavior<Command> onMember(MemberChanged changed) {
        ClusterEvent.MemberEvent e = changed.event();
        if (e instanceof ClusterEvent.MemberRemoved || e instanceof ClusterEvent.MemberExited
                || e instanceof ClusterEvent.MemberLeft || e instanceof ClusterEvent.MemberDowned) {
            nodeLost(e.member().address(), "left the cluster (" + e.member().status() + ")");
        }
        return finishCloseIfDone();
    }

    private Behavior<Command> onReachability(ReachabilityChanged changed) {
        if (changed.event() instanceof ClusterEvent.UnreachableMember u) {
            nodeLost(u.member().address(), "is unreachable");
        }
        return finishCloseIfDone();
    }

    private void nodeLost(Address address, String how) {
        for (int r = 0; r < setup.size(); r++) {
            ActorRef<Command> peer = peers.get(r);
            if (r != setup.rank() && peer != null && address.equals(peer.path().address())) {
                peerLost(r, "its node " + address + " " + how);
            }
        }
    }

    /** Reports rank {@code r} lost to the member, once; a rank that said goodbye left in order and is not reported. */
    private void peerLost(int r, String why) {
        if (lost[r] || departed[r]) {
            return;
        }
        lost[r] = true;
        outbox.get(r).clear();
        setup.inbox().add(new Envelope(r, new CollectiveMessage.Left(r, "member " + r + " of collective group " + setup.group()
                + " was lost: " + why)));
        getContext().getLog().warn("collective group {} rank {}: member {} was lost: {}", setup.group(), setup.rank(), r, why);
    }

    // ------------------------------------------------------------------ close

    private Behavior<Command> onClose(Close close) {
        if (closing != null) {
            closing.whenComplete((v, e) -> close.done().complete(null));
            return this;
        }
        closing = close.done();
        if (!joined) {
            return Behaviors.stopped();
        }
        for (int r = 0; r < setup.size(); r++) {
            if (r != setup.rank() && !lost[r] && !departed[r]) {
                // Behind everything sent before, on the same ordered path: the peer has it all when this arrives.
                outbox.get(r).add(new Goodbye(setup.rank()));
                drain(r);
            }
        }
        timers.startSingleTimer(Deadline.CLOSE, Deadline.CLOSE, setup.closeTimeout());
        return finishCloseIfDone();
    }

    private Behavior<Command> onGoodbye(Goodbye goodbye) {
        if (!isPeer(goodbye.from(), goodbye)) {
            return this;
        }
        departed[goodbye.from()] = true;
        ActorRef<Command> peer = peerCredits.get(goodbye.from());
        if (peer != null) {
            peer.tell(new GoodbyeAck(setup.rank()));
        }
        return finishCloseIfDone();
    }

    private Behavior<Command> onGoodbyeAck(GoodbyeAck ack) {
        if (!isPeer(ack.from(), ack)) {
            return this;
        }
        acked[ack.from()] = true;
        return finishCloseIfDone();
    }

    private Behavior<Command> finishCloseIfDone() {
        if (closing == null) {
            return this;
        }
        for (int r = 0; r < setup.size(); r++) {
            // A peer that said goodbye itself has finished its collectives and needs nothing more from this rank.
            if (r != setup.rank() && !lost[r] && !acked[r] && !departed[r]) {
                return this;
            }
        }
        return Behaviors.stopped();
    }

    private Behavior<Command> onCloseDeadline() {
        getContext().getLog().warn("collective group {} rank {}: closing without every peer's acknowledgement after {}",
                setup.group(), setup.rank(), setup.closeTimeout());
        return Behaviors.stopped();
    }

    private Behavior<Command> onPostStop(PostStop stop) {
        setup.joined().completeExceptionally(new ClusterCollectiveException("collective group " + setup.group() + ", rank "
                + setup.rank() + ": the transport was closed before every rank joined"));
        if (closing != null) {
            closing.complete(null);
        }
        return this;
    }
}
