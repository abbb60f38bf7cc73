package io.graphlane.cluster.collective;

import com.typesafe.config.Config;
import io.graphlane.backend.cpu.collective.CollectiveSettings;
import io.graphlane.backend.cpu.collective.CollectiveTransport.Envelope;
import java.io.IOException;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.LinkedBlockingQueue;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.javadsl.Adapter;
import org.apache.pekko.actor.typed.receptionist.ServiceKey;
import org.apache.pekko.serialization.SerializationExtension;
import org.apache.pekko.serialization.Serializer;

/**
 * Collective groups whose ranks live on different nodes of one Pekko cluster: {@link #join} makes this node's
 * {@link ClusterCollectiveTransport} for one rank of one group, over which {@code CpuCollectiveMember.over} makes the
 * rank's member. The ranks find each other through the receptionist (one {@link ServiceKey} per group); their
 * {@code CollectiveMessage}s travel over a direct TCP socket per pair of ranks ({@code payload = socket}, the default,
 * see {@link SocketPayloadPlane}) or as actor messages over Artery ({@code payload = artery}; see
 * {@link ClusterCollectiveTransport}).
 *
 * <p>Configuration (reference.conf): {@code graphlane.cluster.collective.payload}, {@code join-timeout},
 * {@code window-chunks} and {@code socket-buffer}; for the Artery plane, the large-message stream and its frame size under
 * {@code graphlane.cluster.profiles.common}, which a node built by {@code NodeConfig} applies. Refuses a chunk size that
 * does not fit the frame its plane would carry it in, and a payload plane other than socket or artery.
 */
public final class ClusterCollectives {
    /**
     * Bytes a chunk's frame holds besides its floats, with room to spare: Artery's envelope header (recipient path
     * before it is compressed, serializer id, manifest) and the chunk's own header (class id, ranks, sequence, offset).
     */
    static final int CHUNK_FRAME_OVERHEAD = 1024;

    private ClusterCollectives() {
    }

    /**
     * Joins rank {@code rank} of the {@code size}-rank group {@code group} on the node of {@code system}, waiting for
     * the other ranks at most {@code graphlane.cluster.collective.join-timeout}.
     *
     * @return completes with this rank's transport once every rank of the group has joined; fails with a
     *         {@link ClusterCollectiveException} naming the ranks missing at the deadline, a rank claimed twice, or
     *         a rank told another group size
     * @throws IllegalArgumentException if the rank, size or chunk size is out of range (nothing was started)
     */
    public static CompletionStage<ClusterCollectiveTransport> join(ActorSystem<?> system, String group, int rank, int size,
                                                                   CollectiveSettings settings) {
        Objects.requireNonNull(system, "system");
        return join(system, group, rank, size, settings, collectiveConfig(system).getDuration("join-timeout"));
    }

    /** Like {@link #join(ActorSystem, String, int, int, CollectiveSettings)} with an explicit deadline for the others to join. */
    public static CompletionStage<ClusterCollectiveTransport> join(ActorSystem<?> system, String group, int rank, int size,
                                                                   CollectiveSettings settings, Duration joinTimeout) {
        return join(system, group, rank, size, settings, joinTimeout, plane -> { });
    }

    /** Like {@link #join(ActorSystem, String, int, int, CollectiveSettings, Duration)}; {@code opened} sees the payload plane once bound. */
    static CompletionStage<ClusterCollectiveTransport> join(ActorSystem<?> system, String group, int rank, int size, CollectiveSettings settings,
                                                            Duration joinTimeout, java.util.function.Consumer<SocketPayloadPlane> opened) {
        Objects.requireNonNull(system, "system");
        Objects.requireNonNull(group, "group");
        Objects.requireNonNull(settings, "settings");
        Objects.requireNonNull(joinTimeout, "joinTimeout");
        if (group.isEmpty()) {
            throw new IllegalArgumentException("collective group name must not be empty");
        }
        if (size < 1) {
            throw new IllegalArgumentException("collective group " + group + ": size must be >= 1, got " + size);
        }
        if (rank < 0 || rank >= size) {
            throw new IllegalArgumentException("collective group " + group + ": rank must be in [0, " + size + "), got " + rank);
        }
        if (joinTimeout.isNegative() || joinTimeout.isZero()) {
            throw new IllegalArgumentException("collective group " + group + ": join timeout must be positive, got " + joinTimeout);
        }
        boolean sockets = payload(system.settings().config());
        if (sockets) {
            requireSocketChunkFits(group, settings.chunkFloats());
        } else {
            requireChunkFits(system.settings().config(), group, settings.chunkFloats());
        }
        int window = collectiveConfig(system).getInt("window-chunks");
        if (window < 1) {
            throw new IllegalArgumentException("graphlane.cluster.collective.window-chunks must be >= 1, got " + window);
        }
        LinkedBlockingQueue<Envelope> inbox = new LinkedBlockingQueue<>();
        PeerStatus status = new PeerStatus(group, rank, size, inbox);
        SocketPayloadPlane plane = sockets && size > 1 ? openPlane(system, group, rank, window, settings.chunkFloats(), status, inbox) : null;
        if (plane != null) {
            opened.accept(plane);
        }
        CompletableFuture<List<ActorRef<CollectiveRankActor.Command>>> joined = new CompletableFuture<>();
        CollectiveRankActor.Setup setup = new CollectiveRankActor.Setup(group, rank, size, window, joinTimeout, settings.memberTimeout(),
                inbox, joined, status, plane);
        CompletableFuture<ActorRef<CollectiveRankActor.Command>> spawned = new CompletableFuture<>();
        CompletionStage<?> terminated = system.getWhenTerminated();
        if (plane != null) {
            // With its node gone, this rank's sockets close too, and its peers see it lost.
            terminated.whenComplete((t, e) -> plane.abort());
            spawned.whenComplete((a, e) -> {
                if (e != null) {
                    plane.abort();
                }
            });
        }
        CollectiveRanks.ID.apply(system).spawn(new CollectiveRanks.Spawn(setup, actorName(group, rank), spawned));
        int batch = Math.max(1, window / 4);
        return spawned.thenCompose(actor -> joined.thenApply(credits -> new ClusterCollectiveTransport(group, rank, size, inbox, actor,
                credits, batch, settings.memberTimeout(), terminated, plane)));
    }

    /** True for {@code graphlane.cluster.collective.payload = socket}, false for {@code artery}; refuses anything else. */
    static boolean payload(Config config) {
        String payload = config.getString("graphlane.cluster.collective.payload");
        return switch (payload) {
            case "socket" -> true;
            case "artery" -> false;
            default -> throw new IllegalArgumentException("graphlane.cluster.collective.payload must be socket or artery, got '" + payload + "'");
        };
    }

    private static SocketPayloadPlane openPlane(ActorSystem<?> system, String group, int rank, int window, int chunkFloats, PeerStatus status,
                                                LinkedBlockingQueue<Envelope> inbox) {
        Config config = system.settings().config();
        String host = system.address().getHost().orElse("127.0.0.1");
        // Behind the frame guard Artery itself binds loopback; the payload sockets bind where the guard listens.
        String bind = config.hasPath(io.graphlane.cluster.guard.ArteryEndpoint.PUBLIC_BIND_HOSTNAME)
                ? config.getString(io.graphlane.cluster.guard.ArteryEndpoint.PUBLIC_BIND_HOSTNAME)
                : config.getString("pekko.remote.artery.bind.hostname");
        String bindHost = bind.isEmpty() ? host : bind;
        long buffer = collectiveConfig(system).getBytes("socket-buffer");
        if (buffer < 64 * 1024 || buffer > Integer.MAX_VALUE) {
            throw new IllegalArgumentException("graphlane.cluster.collective.socket-buffer must be in [64 KiB, 2 GiB), got " + buffer + " bytes");
        }
        Serializer serializer;
        try {
            serializer = SerializationExtension.get(Adapter.toClassic(system)).serializerFor(CollectiveRankActor.Deliver.class);
        } catch (java.io.NotSerializableException e) {
            throw new IllegalArgumentException("collective group " + group + ": no serializer is bound to "
                    + CollectiveRankActor.Deliver.class.getName() + " in pekko.actor.serialization-bindings", e);
        }
        if (!(serializer instanceof CollectiveWireSerializer wire)) {
            throw new IllegalArgumentException("collective group " + group + ": the payload sockets frame messages with "
                    + CollectiveWireSerializer.class.getName() + ", but " + CollectiveRankActor.Deliver.class.getName() + " is bound to "
                    + serializer.getClass().getName() + " in pekko.actor.serialization-bindings");
        }
        try {
            return SocketPayloadPlane.open(group, rank, window, (int) buffer, chunkFloats, wire, status, inbox, host, bindHost,
                    PayloadTls.of(Adapter.toClassic(system)),
                    collectiveConfig(system).getBoolean("shared-memory") ? SharedMemorySegment.directory() : null);
        } catch (IOException e) {
            throw new ClusterCollectiveException("collective group " + group + ", rank " + rank + ": cannot bind a payload socket on "
                    + bindHost + ": " + e.getMessage());
        }
    }

    /** The largest chunk the socket plane frames: a frame's length is a signed 32-bit count of bytes. */
    static final int MAX_SOCKET_CHUNK_FLOATS = (Integer.MAX_VALUE - SocketPayloadPlane.CHUNK_FRAME_OVERHEAD) / Float.BYTES / 2;

    /** Refuses a chunk the socket plane cannot frame. */
    static void requireSocketChunkFits(String group, int chunkFloats) {
        if (chunkFloats > MAX_SOCKET_CHUNK_FLOATS) {
            throw new IllegalArgumentException("collective group " + group + ": a chunk of " + chunkFloats + " floats exceeds the "
                    + MAX_SOCKET_CHUNK_FLOATS + " floats a payload socket frame holds; lower the chunk size");
        }
    }

    /** The receptionist key the rank actors of {@code group} register under. */
    static ServiceKey<CollectiveRankActor.Command> serviceKey(String group) {
        return ServiceKey.create(CollectiveRankActor.Command.class, "graphlane-collective-" + group);
    }

    /** The rank actor's name: the group (URL-encoded, so any name is a valid path element) and the rank. */
    static String actorName(String group, int rank) {
        return URLEncoder.encode(group, StandardCharsets.UTF_8) + "-" + rank;
    }

    private static Config collectiveConfig(ActorSystem<?> system) {
        return system.settings().config().getConfig("graphlane.cluster.collective");
    }

    /** Refuses a chunk whose frame exceeds the Artery frame the rank actors' messages travel in. */
    static void requireChunkFits(Config config, String group, int chunkFloats) {
        boolean large = config.getStringList("pekko.remote.artery.large-message-destinations").contains(CollectiveRanks.DESTINATIONS);
        String key = large ? "pekko.remote.artery.advanced.maximum-large-frame-size" : "pekko.remote.artery.advanced.maximum-frame-size";
        long frame = config.getBytes(key);
        long needed = (long) chunkFloats * Float.BYTES + CHUNK_FRAME_OVERHEAD;
        if (needed > frame) {
            throw new IllegalArgumentException("collective group " + group + ": a chunk of " + chunkFloats + " floats needs a frame of "
                    + needed + " bytes but " + key + " is " + frame + " bytes; lower the chunk size to at most "
                    + (frame - CHUNK_FRAME_OVERHEAD) / Float.BYTES + " floats or raise " + key
                    + (large ? "" : " (or list " + CollectiveRanks.DESTINATIONS + " in pekko.remote.artery.large-message-destinations)"));
        }
    }
}
