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
 * It registers under the group's {@link ServiceKey}, greets every other rank it finds there ({@link Hello}, which
 * carries the rank's payload socket with the socket plane), and completes the join once it knows all of them and, with
 * the socket plane, once its {@link SocketPayloadPlane} has a socket up to each of them (it asks the plane to connect to
 * every higher rank it is greeted by). With the Artery plane it then carries the member's messages: outgoing ones leave
 * in send order per peer, payload chunks only while the peer has granted credit (at most a window of chunks in flight
 * per peer, so Artery's bounded queues never overflow and drop one); incoming ones go into the member's inbox. With the
 * socket plane the member's messages bypass it.
 *
 * <p>Loss: it watches the cluster's membership and, with the Artery plane, every peer's rank actor (with the socket
 * plane the peer's socket tells instead, see {@link #onHello}); a peer that stops or whose node leaves, is downed or
 * removed is reported once through the {@link PeerStatus} it shares with the plane, as a
 * {@link CollectiveMessage.Left} naming its rank, into the member's inbox, so the collective under way (or the next one)
 * fails on this member. A node that is only unreachable for a while is no loss: its messages still arrive once the
 * failure detector hears it again, and a group broken for that would stay broken under a stage that runs on. A peer
 * that said goodbye (over Artery or over its socket) closed its transport in order and is not reported.
 */
final class CollectiveRankActor extends AbstractBehavior<CollectiveRankActor.Command> {

    /** Everything the rank actor handles. */
    sealed interface Command {
    }

    /**
     * Wire: rank {@code rank} of {@code group} ({@code size} ranks) is {@code rankActor}; credits for it go to {@code credits}.
     * With the socket payload plane, its server socket is {@code payloadHost:payloadPort} and a lower rank connecting there
     * presents {@code payloadNonce}; with the Artery plane the port is 0.
     */
    record Hello(String group, int rank, int size, ActorRef<Command> rankActor, ActorRef<Command> credits,
                 String payloadHost, int payloadPort, long payloadNonce) implements Command {
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

    /** Local: the payload socket to rank {@code rank} is up (socket plane). */
    private record LinkUp(int rank) implements Command {
    }

    /** Local: the payload socket to rank {@code rank} could not be set up (socket plane). */
    private record LinkFailed(int rank, String why) implements Command {
    }

    private record MemberChanged(ClusterEvent.MemberEvent event) implements Command {
    }

    private enum Deadline implements Command {
        JOIN, CLOSE
    }

    /**
     * How the rank actor is set up: {@code plane} is the socket payload plane, or null when the member's messages travel
     * through the rank actors over Artery; {@code status} is shared with the plane.
     */
    record Setup(String group, int rank, int size, int window, Duration joinTimeout, Duration closeTimeout,
                 BlockingQueue<Envelope> inbox, CompletableFuture<List<ActorRef<Command>>> joined, PeerStatus status,
                 SocketPayloadPlane plane) {
    }

    private final Setup setup;
    private final ServiceKey<Command> key;
    private final ActorRef<Command> credits;
    private final TimerScheduler<Command> timers;
    private final List<ActorRef<Command>> peers;
    private final List<ActorRef<Command>> peerCredits;
    private final List<ArrayDeque<Command>> outbox;
    private final int[] creditLeft;
    private final PeerStatus status;
    private final SocketPayloadPlane plane;
    private final boolean[] linkUp;
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
        status = setup.status();
        plane = setup.plane();
        linkUp = new boolean[n];
        linkUp[setup.rank()] = true;
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
        if (plane != null) {
            plane.start(new SocketPayloadPlane.Listener() {
                @Override
                public void linkUp(int peer) {
                    self.tell(new LinkUp(peer));
                }

                @Override
                public void linkFailed(int peer, String why) {
                    self.tell(new LinkFailed(peer, why));
                }
            });
        }
        context.getSystem().receptionist().tell(Receptionist.register(key, self));
        context.getSystem().receptionist().tell(Receptionist.subscribe(key, context.messageAdapter(Receptionist.Listing.class, Listed::new)));
        Cluster cluster = Cluster.get(context.getSystem());
        cluster.subscriptions().tell(Subscribe.create(context.messageAdapter(ClusterEvent.MemberEvent.class, MemberChanged::new),
                ClusterEvent.MemberEvent.class));
        // Reachability is not watched: the failure detector misses a busy node for a few seconds now and then (one that is
        // starting, a JVM under load or in a long GC) while its messages still arrive, and reporting it lost would break
        // the group for good, though the node is reachable again a moment later and everything around the group (a
        // stage's lead and host, the serving engine) keeps it as it was. A peer that is really gone ends its payload
        // socket, stops its rank actor, or is downed and removed from the cluster; one that stays silent fails the
        // collective at the member timeout.
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
                .onMessage(LinkUp.class, this::onLinkUp)
                .onMessage(LinkFailed.class, this::onLinkFailed)
                .onMessage(Goodbye.class, this::onGoodbye)
                .onMessage(GoodbyeAck.class, this::onGoodbyeAck)
                .onMessage(Close.class, this::onClose)
                .onMessage(MemberChanged.class, this::onMember)
                .onMessageEquals(Deadline.JOIN, this::onJoinDeadline)
                .onMessageEquals(Deadline.CLOSE, this::onCloseDeadline)
                .onSignal(Terminated.class, this::onTerminated)
                .onSignal(PostStop.class, this::onPostStop)
                .build();
    }

    // ------------------------------------------------------------------ payload

    private Behavior<Command> onSend(Send send) {
        if (!status.isLost(send.to())) {
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
        return plane == null
                ? new Hello(setup.group(), setup.rank(), setup.size(), getContext().getSelf(), credits, "", 0, 0L)
                : new Hello(setup.group(), setup.rank(), setup.size(), getContext().getSelf(), credits, plane.host(), plane.port(), plane.nonce());
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
        boolean peerUsesSockets = hello.payloadPort() > 0;
        if (peerUsesSockets != (plane != null)) {
            return joinFailed("rank " + hello.rank() + " on " + where + " carries payload over " + (peerUsesSockets ? "sockets" : "Artery")
                    + ", this rank over " + (plane != null ? "sockets" : "Artery")
                    + "; set graphlane.cluster.collective.payload alike on every node");
        }
        if (known == null) {
            peers.set(hello.rank(), hello.rankActor());
            peerCredits.set(hello.rank(), hello.credits());
            if (plane == null) {
                getContext().watch(hello.rankActor());
            } else {
                // No death watch with the socket plane: the peer's socket says all it would, and says it right. A peer
                // whose rank actor stops closes its sockets (its plane is aborted with it), a crashed process's sockets
                // close, and a node gone without a word is downed and removed (onMember). Pekko keys remote death watch by
                // address, and a watch of a rank actor on a node that replaced a removed one at the same host and port
                // can end at once, although the actor runs (seen right after a stage's lead was replaced: the survivor
                // reported the new lead lost while joining, and the group failed its first collective).
                plane.peerNode(hello.rank(), where);
                if (hello.rank() > setup.rank()) {
                    plane.connect(hello.rank(), hello.payloadHost(), hello.payloadPort(), hello.payloadNonce());
                }
            }
        }
        if (greeted.add(hello.rankActor())) {
            hello.rankActor().tell(hello());
        }
        drain(hello.rank());
        return completeJoinIfReady();
    }

    private Behavior<Command> onLinkUp(LinkUp up) {
        linkUp[up.rank()] = true;
        return completeJoinIfReady();
    }

    private Behavior<Command> onLinkFailed(LinkFailed failed) {
        return joinFailed("the payload socket to rank " + failed.rank() + " could not be set up: " + failed.why());
    }

    private Behavior<Command> completeJoinIfReady() {
        if (joined || peers.contains(null)) {
            return this;
        }
        if (plane != null) {
            for (boolean up : linkUp) {
                if (!up) {
                    return this;
                }
            }
        }
        completeJoin();
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
        List<Integer> unlinked = new ArrayList<>();
        for (int r = 0; r < setup.size(); r++) {
            if (peers.get(r) == null) {
                missing.add(r);
            } else if (plane != null && !linkUp[r]) {
                unlinked.add(r);
            }
        }
        if (missing.isEmpty()) {
            return joinFailed("the payload sockets to ranks " + unlinked + " were not up within " + setup.joinTimeout()
                    + " (check that the nodes reach each other's Artery hosts on any TCP port)");
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
        if (r >= 0 && status.isDeparted(r)) {
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
        if (status.lost(r, why)) {
            outbox.get(r).clear();
        }
    }

    // ------------------------------------------------------------------ close

    private Behavior<Command> onClose(Close close) {
        if (closing != null) {
            closing.whenComplete((v, e) -> close.done().complete(null));
            return this;
        }
        closing = close.done();
        if (!joined || plane != null) {
            // With the socket plane the goodbyes went over the sockets before the transport sent Close.
            return Behaviors.stopped();
        }
        for (int r = 0; r < setup.size(); r++) {
            if (r != setup.rank() && status.isLive(r)) {
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
        status.depart(goodbye.from());
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
            if (r != setup.rank() && status.isLive(r) && !acked[r]) {
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
        if (plane != null) {
            plane.abort();
        }
        setup.joined().completeExceptionally(new ClusterCollectiveException("collective group " + setup.group() + ", rank "
                + setup.rank() + ": the transport was closed before every rank joined"));
        if (closing != null) {
            closing.complete(null);
        }
        return this;
    }
}
