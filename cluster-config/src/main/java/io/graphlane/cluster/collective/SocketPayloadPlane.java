package io.graphlane.cluster.collective;

import io.graphlane.backend.cpu.collective.CollectiveMessage;
import io.graphlane.backend.cpu.collective.CollectiveTransport.Envelope;
import io.graphlane.core.log.WarningGate;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.StandardSocketOptions;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.security.SecureRandom;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReferenceArray;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The payload plane of one rank of a collective group across nodes when {@code graphlane.cluster.collective.payload =
 * socket}: one direct TCP connection per pair of ranks, carrying every member message between them (descriptors,
 * chunks, consumption answers, departures) in send order, while Artery keeps only the control plane (the rank actors'
 * greeting, death watch and the cluster's membership events).
 *
 * <p>Join: the plane binds a server socket on this node's Artery host (an ephemeral port) before the rank actor greets
 * the others, and the {@link CollectiveRankActor.Hello} carries its host, port and a random join nonce. For each pair
 * the lower rank connects to the higher rank's port and sends a handshake (magic, version, group, its rank, the
 * receiver's rank and the receiver's nonce); the receiver refuses, and logs, a handshake of another group, rank or
 * nonce (a stray), and answers one byte. The rank actor completes the join only once every pair's socket is up. Each
 * accepted connection's handshake runs on a short-lived thread of its own (at most {@link #MAX_PENDING_HANDSHAKES})
 * under its own deadline, so a silent or garbage connection delays no other; refusals are logged as one warning per
 * 10 s with a count, the rest at debug.
 *
 * <p>TLS: with Artery over TLS ({@link PayloadTls}) every socket is a {@link TlsPayloadChannel} with Artery's key and
 * trust stores, the accepting side requiring the connecting side's certificate, and the handshake above runs inside
 * the TLS session; otherwise a {@link PlainPayloadChannel}, unencrypted.
 *
 * <p>Frames: a 4-byte little-endian length (checked, before anything is allocated for the frame, against the larger of
 * the group's chunk frame and 8 MiB; a handshake's group name against {@link #MAX_GROUP_NAME_BYTES}), then what
 * {@link CollectiveWireSerializer} writes for a {@link CollectiveRankActor.Deliver} or {@link CollectiveRankActor.Goodbye}
 * (the same Kryo frames Artery carries). {@link #send} frames the message on the caller's thread (a chunk's floats in
 * one bulk copy into a pooled direct buffer of the group's chunk frame) and hands the frame to the link's writer thread:
 * it never waits for the network. One writer and one reader thread per peer (daemon, named after the group, the ranks and
 * the direction); sockets with TCP_NODELAY and large buffers. Socket I/O is only {@code read(ByteBuffer)} and
 * {@code write(ByteBuffer)} on the link's channel.
 *
 * <p>Receiving moves each byte once: the reader reads a frame into one of its link's pooled direct buffers and a chunk's
 * values handed to the member are a view of that very buffer ({@link CollectiveWireSerializer#fromBinaryViewing}), which
 * the member folds or copies straight into its output; once it has, {@link #consumed(int, CollectiveMessage.Chunk)} gives
 * the buffer back to the reader. Every other frame is decoded (copied) and its buffer given back at once.
 *
 * <p>Memory: the receiving side bounds it. A link's reader holds at most {@code window-chunks} frame buffers the member
 * has not consumed and then stops reading, so TCP's own flow control holds the sender's writer; what the sender's member
 * sends ahead of that waits, framed, in the writer's queue (at most what the algorithm sends before its next receive: one
 * ring step's segment, or one block per peer of an all-to-all). Per link: at most {@code window-chunks} receive buffers
 * and as many pooled send frames, each of the group's chunk frame, allocated on first use and reused.
 *
 * <p>Shared memory: with a directory for segments ({@code graphlane.cluster.collective.shared-memory = on}), the
 * connecting rank, once its handshake is accepted, offers a new {@link SharedMemorySegment} (path, random token, ring
 * size) over the socket, inside TLS when TLS is on; the accepting rank maps it if it has a directory too and finds that
 * token there (so ranks on different hosts keep the socket), answers one byte, and the file is deleted. The link's
 * frames then travel through the segment's two rings ({@link SharedMemoryChannel}) and the socket carries only
 * doorbells (a reader waiting on an empty ring sleeps on it) and ends the link as before. Each ring holds at least four
 * chunk frames (at most 64 MiB, at least {@code socket-buffer}); a frame up to half the ring lies in one piece, and the
 * reader hands the member its chunk as a view of the ring itself, whose space returns to the writer, in order, once
 * the member gives it back ({@link #consumed}); a longer frame is copied out in pieces as it arrives. The window bounds
 * the frames held as it bounds the receive buffers, and a full ring holds the writer as TCP's flow control would.
 * The mapping is released once the link's threads have ended and the member holds no frame of it.
 *
 * <p>Loss and close: a socket that ends (EOF, reset, a frame this node cannot read) before its peer said goodbye reports
 * that peer lost through {@link PeerStatus}, once, whichever of the plane and the rank actor notices first. An orderly
 * {@link #closeAsync} queues a goodbye frame behind everything queued and half-closes each socket; a peer answers a
 * goodbye with its own, and a link is finished once both ways ended. A peer that said goodbye is never reported lost.
 */
final class SocketPayloadPlane {
    private static final Logger LOG = LoggerFactory.getLogger(SocketPayloadPlane.class);
    private static final int MAGIC = 0x474C5043;
    private static final byte VERSION = 2;
    /** How long one connection may take, from connect or accept to its answer (TLS handshake included). */
    static final long HANDSHAKE_TIMEOUT_MS = 10_000;
    /** Handshakes the accepting side serves at once, one short-lived thread each; a connection beyond them is closed. */
    static final int MAX_PENDING_HANDSHAKES = 64;
    /** At most one warning per this many nanoseconds about refused connections; the others go to debug. */
    /** Bytes a chunk's frame holds besides its floats: the length prefix and the Kryo header, with room to spare. */
    static final int CHUNK_FRAME_OVERHEAD = 64;
    /** The largest frame other than a chunk (a descriptor with up to 2^20 send counts, a departure's reason). */
    private static final int MAX_CONTROL_FRAME = 8 << 20;
    /** The longest group name (UTF-8 bytes) a handshake may declare; checked before the name is read. */
    static final int MAX_GROUP_NAME_BYTES = 4096;
    static final byte ACCEPTED = 1;
    static final byte REFUSED = 0;

    /** What the rank actor hears from the plane during the join. */
    interface Listener {
        void linkUp(int peer);

        void linkFailed(int peer, String why);
    }

    /**
     * A frame the writer writes: {@code bytes}, then {@code payload} if there is one (a chunk's floats in the sender's
     * own memory, written from there; {@code ticket} numbers such frames per link). {@code pool} takes {@code bytes}
     * back once written, if not null.
     */
    record Frame(ByteBuffer bytes, ArrayBlockingQueue<ByteBuffer> pool, boolean goodbye, ByteBuffer payload, long ticket) {
        Frame(ByteBuffer bytes, ArrayBlockingQueue<ByteBuffer> pool, boolean goodbye) {
            this(bytes, pool, goodbye, null, 0);
        }
    }

    private final String group;
    final int rank;
    final int window;
    private final int bufferBytes;
    final int chunkFrameBytes;
    final int maxFrameBytes;
    final CollectiveWireSerializer serializer;
    final PeerStatus status;
    final BlockingQueue<Envelope> inbox;
    private final ServerSocketChannel server;
    private final String host;
    private final int port;
    private final long nonce;
    private final AtomicReferenceArray<PayloadLink> links;
    private final AtomicReferenceArray<String> nodes;
    private final AtomicBoolean started = new AtomicBoolean();
    /** TLS with Artery's key and trust stores, or null for plain TCP. */
    private final PayloadTls tls;
    /** Where this rank creates shared-memory segments for its links to higher ranks, or null to offer none. */
    /** Offers and answers the shared-memory segment of a link between two ranks on one host. */
    private final SharedMemoryNegotiation sharedMemory;
    /** Connections accepted whose handshake is under way; closed at once on abort. */
    private final Set<SocketChannel> pending = ConcurrentHashMap.newKeySet();
    private final Semaphore handshakeSlots = new Semaphore(MAX_PENDING_HANDSHAKES);
    /** Lower ranks linked so far; at {@code rank} the server socket closes. */
    private final AtomicInteger accepted = new AtomicInteger();
    private final WarningGate refusalWarnings = new WarningGate(java.time.Duration.ofSeconds(10));
    private volatile boolean allAccepted;
    private volatile Listener listener;
    private volatile boolean closing;
    volatile boolean aborted;

    private SocketPayloadPlane(String group, int rank, int size, int window, int bufferBytes, int chunkFloats,
                               CollectiveWireSerializer serializer, PeerStatus status, BlockingQueue<Envelope> inbox,
                               ServerSocketChannel server, String host, PayloadTls tls, java.nio.file.Path sharedMemory) throws IOException {
        this.group = group;
        this.rank = rank;
        this.window = window;
        this.bufferBytes = bufferBytes;
        this.chunkFrameBytes = Math.toIntExact((long) chunkFloats * Float.BYTES + CHUNK_FRAME_OVERHEAD);
        this.maxFrameBytes = Math.max(chunkFrameBytes, MAX_CONTROL_FRAME);
        this.serializer = serializer;
        this.status = status;
        this.inbox = inbox;
        this.server = server;
        this.host = host;
        this.tls = tls;
        this.sharedMemory = new SharedMemoryNegotiation(group, rank, sharedMemory, bufferBytes, chunkFrameBytes);
        this.port = ((InetSocketAddress) server.getLocalAddress()).getPort();
        this.nonce = new SecureRandom().nextLong();
        this.links = new AtomicReferenceArray<>(size);
        this.nodes = new AtomicReferenceArray<>(size);
        status.onLost(this::abortLink);
    }

    /**
     * Binds the plane's server socket on {@code bindHost} (an ephemeral port) and advertises {@code host}; every socket
     * runs TLS when {@code tls} is given, plain TCP when it is null. With {@code sharedMemory} (a directory; null for
     * none) a link between two ranks on one host carries its payload through a segment created there
     * ({@link SharedMemoryChannel}), the socket serving as its doorbell; a rank accepts such an offer only if it has a
     * directory itself.
     *
     * @throws IOException if no socket could be bound there
     */
    static SocketPayloadPlane open(String group, int rank, int window, int bufferBytes, int chunkFloats, CollectiveWireSerializer serializer,
                                   PeerStatus status, BlockingQueue<Envelope> inbox, String host, String bindHost, PayloadTls tls,
                                   java.nio.file.Path sharedMemory) throws IOException {
        ServerSocketChannel server = ServerSocketChannel.open();
        try {
            server.setOption(StandardSocketOptions.SO_RCVBUF, bufferBytes);
            server.bind(new InetSocketAddress(InetAddress.getByName(bindHost), 0));
            return new SocketPayloadPlane(group, rank, status.size(), window, bufferBytes, chunkFloats, serializer, status, inbox, server, host, tls, sharedMemory);
        } catch (IOException | RuntimeException e) {
            server.close();
            throw e;
        }
    }

    /** The host the Hello advertises. */
    String host() {
        return host;
    }

    /** The port the Hello advertises. */
    int port() {
        return port;
    }

    /** The nonce a lower rank must present when it connects. */
    long nonce() {
        return nonce;
    }

    /** Records the node of rank {@code peer} (its Artery address), for the reason a loss names. */
    void peerNode(int peer, String node) {
        nodes.set(peer, node);
    }

    /** Starts accepting the lower ranks' connections; {@code listener} hears of each link that comes up or fails. */
    void start(Listener listener) {
        this.listener = listener;
        if (!started.compareAndSet(false, true)) {
            return;
        }
        if (rank == 0) {
            closeQuietly(server);
            return;
        }
        Thread acceptor = new Thread(this::acceptLoop, "graphlane-collective-" + group + "-" + rank + "-accept");
        acceptor.setDaemon(true);
        acceptor.start();
    }

    /** Connects to the higher rank {@code peer} at {@code peerHost:peerPort}, presenting {@code peerNonce}; asynchronous. */
    void connect(int peer, String peerHost, int peerPort, long peerNonce) {
        PayloadLink link = new PayloadLink(this, peer);
        if (!links.compareAndSet(peer, null, link)) {
            return;
        }
        link.writer = new Thread(() -> {
            SocketChannel socket = null;
            PayloadChannel ch;
            SharedMemoryChannel shared;
            HandshakeDeadline deadline = null;
            try {
                socket = SocketChannel.open();
                configure(socket);
                deadline = new HandshakeDeadline(socket);
                socket.socket().connect(new InetSocketAddress(peerHost, peerPort), (int) HANDSHAKE_TIMEOUT_MS);
                ch = tls == null ? new PlainPayloadChannel(socket, peerHost + ":" + peerPort) : tls.client(socket, peerHost, peerPort);
                ByteBuffer hs = handshake(peer, peerNonce);
                while (hs.hasRemaining()) {
                    ch.write(hs);
                }
                ByteBuffer answer = ByteBuffer.allocate(1);
                if (!PayloadChannel.readFully(ch, answer) || answer.get(0) != ACCEPTED) {
                    throw new IOException("rank " + peer + " refused the handshake");
                }
                shared = sharedMemory.offer(ch, peer);
                deadline.settle();
            } catch (IOException e) {
                closeQuietly(socket);
                link.finishUnconnected();
                if (!aborted && !closing) {
                    IOException why = deadline != null && deadline.fired() ? deadline.failure(e) : e;
                    listener.linkFailed(peer, "connecting to " + peerHost + ":" + peerPort + " failed: " + why);
                }
                return;
            }
            if (link.attach(ch, shared)) {
                listener.linkUp(peer);
            }
            link.writeLoop();
        }, threadName(peer, "to"));
        link.writer.setDaemon(true);
        link.writer.start();
    }

    String threadName(int peer, String direction) {
        return "graphlane-collective-" + group + "-" + rank + "-" + direction + "-" + peer;
    }

    private void configure(SocketChannel ch) throws IOException {
        ch.setOption(StandardSocketOptions.TCP_NODELAY, true);
        ch.setOption(StandardSocketOptions.SO_SNDBUF, bufferBytes);
        ch.setOption(StandardSocketOptions.SO_RCVBUF, bufferBytes);
        ch.setOption(StandardSocketOptions.SO_KEEPALIVE, true);
    }

    private ByteBuffer handshake(int to, long toNonce) {
        byte[] g = group.getBytes(StandardCharsets.UTF_8);
        ByteBuffer b = ByteBuffer.allocate(4 + 1 + 4 + g.length + 4 + 4 + 8);
        b.putInt(MAGIC).put(VERSION).putInt(g.length).put(g).putInt(rank).putInt(to).putLong(toNonce).flip();
        return b;
    }

    /**
     * The deadline of one connection's handshake: at {@link #HANDSHAKE_TIMEOUT_MS} after it was made, the socket is
     * closed unless the handshake settled first, so a blocked read or write on it ends.
     */
    private static final class HandshakeDeadline {
        private final AtomicBoolean settled = new AtomicBoolean();
        private volatile boolean fired;

        HandshakeDeadline(SocketChannel socket) {
            CompletableFuture.delayedExecutor(HANDSHAKE_TIMEOUT_MS, TimeUnit.MILLISECONDS).execute(() -> {
                if (settled.compareAndSet(false, true)) {
                    fired = true;
                    closeQuietly(socket);
                }
            });
        }

        /** The handshake is over in time; throws if the deadline closed the socket first. */
        void settle() throws IOException {
            if (!settled.compareAndSet(false, true)) {
                throw new IOException("no handshake within " + HANDSHAKE_TIMEOUT_MS + " ms");
            }
        }

        boolean fired() {
            return fired;
        }

        /** What a failure of the handshake means once the deadline closed its socket. */
        IOException failure(IOException e) {
            return new IOException("no handshake within " + HANDSHAKE_TIMEOUT_MS + " ms", e);
        }
    }

    /**
     * Accepts connections until every lower rank is linked, serving each one's handshake on a thread of its own (at
     * most {@link #MAX_PENDING_HANDSHAKES} at once) under its own deadline, so a connection that stays silent or sends
     * garbage never holds up another.
     */
    private void acceptLoop() {
        try {
            while (!allAccepted && !aborted && !closing) {
                SocketChannel ch = server.accept();
                if (!handshakeSlots.tryAcquire()) {
                    refused(remoteOf(ch), MAX_PENDING_HANDSHAKES + " handshakes are under way already");
                    closeQuietly(ch);
                    continue;
                }
                pending.add(ch);
                if (aborted || closing) {
                    closeQuietly(ch);
                }
                Thread handshake = new Thread(() -> serveHandshake(ch), "graphlane-collective-" + group + "-" + rank + "-handshake");
                handshake.setDaemon(true);
                try {
                    handshake.start();
                } catch (OutOfMemoryError | RuntimeException e) {
                    pending.remove(ch);
                    handshakeSlots.release();
                    closeQuietly(ch);
                    refused(remoteOf(ch), "no thread for its handshake: " + e);
                }
            }
        } catch (IOException e) {
            if (!allAccepted && !aborted && !closing) {
                LOG.warn("collective group {} rank {}: stopped accepting payload connections: {}", group, rank, e.toString());
            }
        } finally {
            closeQuietly(server);
        }
    }

    /** One accepted connection: TLS if on, then the plane's handshake, all within its deadline; a refusal is logged. */
    private void serveHandshake(SocketChannel socket) {
        String from = remoteOf(socket);
        HandshakeDeadline deadline = new HandshakeDeadline(socket);
        try {
            configure(socket);
            PayloadChannel ch = tls == null ? new PlainPayloadChannel(socket, from) : tls.server(socket);
            String refused = acceptHandshake(ch, deadline);
            if (refused != null) {
                ch.write(ByteBuffer.wrap(new byte[] {REFUSED}));
                closeQuietly(ch);
                refused(from, refused);
            }
        } catch (IOException e) {
            closeQuietly(socket);
            if (!aborted && !closing) {
                refused(from, "its handshake failed: " + (deadline.fired() ? deadline.failure(e) : e));
            }
        } finally {
            pending.remove(socket);
            handshakeSlots.release();
        }
    }

    /** Logs a refused connection: a warning at most every 10 s (counting those in between), the rest at debug. */
    private void refused(String from, String why) {
        long heldBack = refusalWarnings.admit();
        if (heldBack != WarningGate.HELD_BACK) {
            LOG.warn("collective group {} rank {}: refused a payload connection from {}: {}{}", group, rank, from, why,
                    WarningGate.heldBackSuffix(heldBack));
        } else {
            LOG.debug("collective group {} rank {}: refused a payload connection from {}: {}", group, rank, from, why);
        }
    }

    private static String remoteOf(SocketChannel ch) {
        try {
            return String.valueOf(ch.getRemoteAddress());
        } catch (IOException e) {
            return "(unknown address)";
        }
    }

    /** Reads and checks a lower rank's handshake; null once its link is up, else why it was refused. */
    private String acceptHandshake(PayloadChannel ch, HandshakeDeadline deadline) throws IOException {
        ByteBuffer head = ByteBuffer.allocate(4 + 1 + 4);
        if (!PayloadChannel.readFully(ch, head)) {
            return "it closed before its handshake";
        }
        head.flip();
        int magic = head.getInt();
        byte version = head.get();
        int groupBytes = head.getInt();
        if (magic != MAGIC || version != VERSION) {
            return "not a collective payload handshake (magic " + Integer.toHexString(magic) + ", version " + version + ")";
        }
        if (groupBytes < 0 || groupBytes > MAX_GROUP_NAME_BYTES) {
            return "its handshake declares a group name of " + groupBytes + " bytes; expected 0.." + MAX_GROUP_NAME_BYTES;
        }
        ByteBuffer rest = ByteBuffer.allocate(groupBytes + 16);
        if (!PayloadChannel.readFully(ch, rest)) {
            return "it closed during its handshake";
        }
        rest.flip();
        byte[] g = new byte[groupBytes];
        rest.get(g);
        String theirGroup = new String(g, StandardCharsets.UTF_8);
        int from = rest.getInt();
        int to = rest.getInt();
        long theirNonce = rest.getLong();
        if (!theirGroup.equals(group) || to != rank || theirNonce != nonce) {
            return "it names group " + theirGroup + " rank " + to + " with another join's nonce; this is group " + group + " rank " + rank;
        }
        if (from < 0 || from >= rank) {
            return "it claims rank " + from + ", but only ranks 0.." + (rank - 1) + " connect to rank " + rank;
        }
        PayloadLink link = new PayloadLink(this, from);
        if (!links.compareAndSet(from, null, link)) {
            return "rank " + from + " is connected already";
        }
        ByteBuffer answer = ByteBuffer.wrap(new byte[] {ACCEPTED});
        SharedMemoryChannel shared;
        try {
            while (answer.hasRemaining()) {
                ch.write(answer);
            }
            shared = sharedMemory.answer(ch, from);
            deadline.settle();
        } catch (IOException e) {
            // The connecting rank sees its connection fail and reports it; this side forgets the link.
            link.finishUnconnected();
            links.compareAndSet(from, link, null);
            throw e;
        }
        if (accepted.incrementAndGet() == rank) {
            allAccepted = true;
            closeQuietly(server);
        }
        link.writer = new Thread(link::writeLoop, threadName(from, "to"));
        link.writer.setDaemon(true);
        if (link.attach(ch, shared)) {
            listener.linkUp(from);
        }
        link.writer.start();
        return null;
    }

    // ------------------------------------------------------------------ the member's side

    /** Frames {@code message} from this rank and queues it for rank {@code to}; drops it if that rank is lost or departed. */
    void send(int to, CollectiveMessage message) {
        PayloadLink link = links.get(to);
        if (link == null || !status.isLive(to)) {
            return;
        }
        ByteBuffer frame;
        ArrayBlockingQueue<ByteBuffer> pool = null;
        boolean fits = message instanceof CollectiveMessage.Chunk c
                && (long) c.values().remaining() * Float.BYTES + CHUNK_FRAME_OVERHEAD <= chunkFrameBytes;
        if (fits && message instanceof CollectiveMessage.Chunk chunk && chunk.values().isDirect()
                && chunk.values().order() == ByteOrder.LITTLE_ENDIAN && chunk.values().hasRemaining()) {
            // The floats are already laid out as the wire wants them: only the header is framed, and the writer
            // writes the floats from the tensor's memory (the member waits in awaitSent before it changes them).
            ByteBuffer head = link.heads.poll();
            if (head == null) {
                head = ByteBuffer.allocateDirect(4 + CHUNK_FRAME_OVERHEAD).order(ByteOrder.LITTLE_ENDIAN);
            }
            head.clear();
            head.position(4);
            serializer.toBinaryHeader(new CollectiveRankActor.Deliver(rank, message), head);
            ByteBuffer payload = bytesOf(chunk.values());
            head.putInt(0, head.position() - 4 + payload.remaining());
            head.flip();
            link.enqueuePayload(head, payload);
            return;
        }
        if (fits) {
            frame = link.pool.poll();
            if (frame == null) {
                frame = ByteBuffer.allocateDirect(chunkFrameBytes).order(ByteOrder.LITTLE_ENDIAN);
            }
            pool = link.pool;
        } else {
            frame = ByteBuffer.allocate(frameBound(message)).order(ByteOrder.LITTLE_ENDIAN);
        }
        frame.clear();
        frame.position(4);
        serializer.toBinary(new CollectiveRankActor.Deliver(rank, message), frame);
        frame.putInt(0, frame.position() - 4);
        frame.flip();
        link.enqueue(new Frame(frame, pool, false));
    }

    /** The remaining floats of {@code floats}, a direct buffer, as bytes over the same memory (no copy). */
    private static ByteBuffer bytesOf(java.nio.FloatBuffer floats) {
        return new org.bytedeco.javacpp.FloatPointer(floats.slice()).asByteBuffer().order(ByteOrder.LITTLE_ENDIAN);
    }

    /**
     * Waits at most {@code timeoutNanos} until every chunk queued to be written from its sender's memory has been
     * written (or dropped with its link); false if the time ran out first.
     */
    boolean awaitSent(long timeoutNanos) throws InterruptedException {
        long deadline = System.nanoTime() + timeoutNanos;
        for (int r = 0; r < links.length(); r++) {
            PayloadLink link = links.get(r);
            if (link != null && !link.awaitWritten(link.lastQueued, deadline)) {
                return false;
            }
        }
        return true;
    }

    /**
     * Drops every chunk queued to be written from its sender's memory and not started yet, and waits at most
     * {@code timeoutNanos} for one being written; a link whose write does not end in time is closed (aborting it).
     */
    void withdrawSent(long timeoutNanos) {
        long deadline = System.nanoTime() + timeoutNanos;
        for (int r = 0; r < links.length(); r++) {
            PayloadLink link = links.get(r);
            if (link == null) {
                continue;
            }
            long upTo = link.lastQueued;
            link.withdrawnUpTo = upTo;
            boolean ended;
            try {
                long writing = link.writingTicket;
                ended = writing == 0 || writing > upTo || link.awaitWritten(writing, deadline);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                ended = false;
            }
            if (!ended) {
                // Closing the socket ends the blocked write at once; the writer thread then ends too.
                link.abort();
                if (!link.awaitWriterEnd(System.nanoTime() + timeoutNanos)) {
                    LOG.warn("collective group {} rank {}: the writer to rank {} did not end within {} ms of its socket closing",
                            group, rank, r, timeoutNanos / 1_000_000);
                }
            }
        }
    }

    /** An upper bound of the frame of a message other than a chunk that fits the pooled buffers. */
    private static int frameBound(CollectiveMessage message) {
        long bound = 4 + CHUNK_FRAME_OVERHEAD;
        if (message instanceof CollectiveMessage.Chunk c) {
            bound += (long) c.values().remaining() * Float.BYTES;
        } else if (message instanceof CollectiveMessage.Descriptor d) {
            int[] counts = d.descriptor().sendCounts();
            bound += 4L * (d.descriptor().kind().name().length() + String.valueOf(d.descriptor().reduceOp()).length()
                    + String.valueOf(d.descriptor().dtype()).length()) + 5L * (counts == null ? 0 : counts.length) + 64;
        } else if (message instanceof CollectiveMessage.Left l) {
            bound += 4L * String.valueOf(l.reason()).length();
        }
        return Math.toIntExact(bound);
    }

    /**
     * The member has read {@code chunk}, which this plane received from rank {@code from}: its buffer goes back to that
     * link's reader, which may read one more frame.
     */
    void consumed(int from, CollectiveMessage.Chunk chunk) {
        PayloadLink link = links.get(from);
        if (link != null) {
            link.giveBack(chunk);
        }
    }

    // ------------------------------------------------------------------ close

    /**
     * Says goodbye on every link behind what is queued and completes once every link ended both ways, or after
     * {@code timeoutMillis} (then the sockets are closed at once). Never fails.
     */
    CompletableFuture<Void> closeAsync(long timeoutMillis) {
        closing = true;
        closeQuietly(server);
        for (SocketChannel ch : pending) {
            closeQuietly(ch);
        }
        List<CompletableFuture<Void>> finishing = new ArrayList<>();
        for (int r = 0; r < links.length(); r++) {
            PayloadLink link = links.get(r);
            if (link != null) {
                // Nothing polls any more: a reader held by the window must read on to the peer's goodbye.
                link.window.release(Integer.MAX_VALUE / 2);
                link.queueGoodbye();
                finishing.add(link.finished);
            }
        }
        return CompletableFuture.allOf(finishing.toArray(CompletableFuture[]::new))
                .orTimeout(timeoutMillis, TimeUnit.MILLISECONDS)
                .handle((v, e) -> {
                    if (e != null) {
                        LOG.warn("collective group {} rank {}: closing the payload sockets without every peer's goodbye after {} ms",
                                group, rank, timeoutMillis);
                    }
                    abort();
                    return null;
                });
    }

    /** Closes every socket at once, reporting nothing (this rank's node or transport is going away). */
    void abort() {
        aborted = true;
        closeQuietly(server);
        for (SocketChannel ch : pending) {
            closeQuietly(ch);
        }
        for (int r = 0; r < links.length(); r++) {
            abortLink(r);
        }
    }

    private void abortLink(int r) {
        PayloadLink link = links.get(r);
        if (link != null) {
            link.abort();
        }
    }

    private static void closeQuietly(java.io.Closeable c) {
        if (c != null) {
            try {
                c.close();
            } catch (IOException ignored) {
                // Closing anyway.
            }
        }
    }

    static void closeQuietly(PayloadChannel c) {
        if (c != null) {
            try {
                c.close();
            } catch (IOException ignored) {
                // Closing anyway.
            }
        }
    }

    /** True if the link to rank {@code peer} is up and carries its payload through shared memory (not the socket's bytes). */
    boolean sharesMemoryWith(int peer) {
        PayloadLink link = links.get(peer);
        return link != null && link.shared != null;
    }

    /**
     * True while the writer to rank {@code peer} waits for room in a full shared-memory ring (a write the peer's member
     * must give frames back to end); false on a socket link, whose blocked write the kernel holds out of sight.
     */
    boolean writerAwaitsRoom(int peer) {
        PayloadLink link = links.get(peer);
        SharedMemoryChannel sh = link == null ? null : link.shared;
        return sh != null && sh.awaitsRoom();
    }

    /** The node of rank {@code peer}: its Artery address once known, else the remote address of its socket. */
    String nodeOf(int peer, PayloadChannel ch) {
        String node = nodes.get(peer);
        return node != null ? node : String.valueOf(ch);
    }

}
