package io.graphlane.cluster.collective;

import java.io.EOFException;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import javax.net.ssl.SSLEngine;
import javax.net.ssl.SSLEngineResult;
import javax.net.ssl.SSLException;

/**
 * A payload socket under TLS: the JDK's {@link SSLEngine} over a blocking {@link SocketChannel}. The engine does every
 * piece of the protocol (handshake, records, alerts, key updates); this class only moves its bytes to and from the
 * socket.
 *
 * <p>Threads: reads hold the read lock and writes the write lock, so the plane's reader and writer run at once (the
 * engine allows one wrap and one unwrap concurrently). A record the reader receives that needs an answer (a key update
 * asking for the peer's) is wrapped and sent under the write lock, so records leave in the engine's order; the reader
 * never waits for that lock (a writer blocked on a full socket would stop it reading, and the peer's writer with it):
 * it leaves the answer to whichever thread next holds the lock, and every holder checks for one as it lets go.
 */
final class TlsPayloadChannel implements PayloadChannel {
    private static final ByteBuffer EMPTY = ByteBuffer.allocate(0);
    /** Records a write wraps before it sends them in one go. */
    private static final int RECORDS_PER_WRITE = 16;

    private final SocketChannel channel;
    private final SSLEngine engine;
    private final String remote;
    private final Object readLock = new Object();
    private final java.util.concurrent.locks.ReentrantLock writeLock = new java.util.concurrent.locks.ReentrantLock();
    /** The reader unwrapped a record that the engine must answer (set before the write lock is tried). */
    private volatile boolean answerPending;
    // The engine's buffers are heap buffers: the JDK's TLS ciphers work on arrays (measured a little faster on loopback).
    /** Bytes read from the socket not unwrapped yet (write mode). */
    private ByteBuffer netIn;
    /** Plaintext unwrapped but not read yet (read mode). */
    private ByteBuffer appIn;
    /** Records wrapped, being sent (each write sends all of it before it returns). */
    private ByteBuffer netOut;
    private boolean inboundDone;

    TlsPayloadChannel(SocketChannel channel, SSLEngine engine, String remote) {
        this.channel = channel;
        this.engine = engine;
        this.remote = remote;
        int packet = engine.getSession().getPacketBufferSize();
        this.netIn = ByteBuffer.allocate(packet * 2);
        this.appIn = ByteBuffer.allocate(engine.getSession().getApplicationBufferSize());
        this.appIn.limit(0);
        this.netOut = ByteBuffer.allocate(packet * RECORDS_PER_WRITE);
    }

    /**
     * Runs the TLS handshake to its end, blocking; a peer that is refused (its certificate is not trusted, it sent no
     * certificate where one is required) or that is not speaking TLS ends it with an exception.
     */
    void handshake() throws IOException {
        engine.beginHandshake();
        SSLEngineResult.HandshakeStatus status = engine.getHandshakeStatus();
        try {
            while (status != SSLEngineResult.HandshakeStatus.FINISHED && status != SSLEngineResult.HandshakeStatus.NOT_HANDSHAKING) {
                switch (status) {
                    case NEED_WRAP -> status = wrapHandshake();
                    case NEED_UNWRAP, NEED_UNWRAP_AGAIN -> {
                        SSLEngineResult r = unwrapIntoAppIn();
                        if (r.getStatus() == SSLEngineResult.Status.CLOSED) {
                            throw new SSLException("the peer closed TLS during the handshake");
                        }
                        if (r.getStatus() == SSLEngineResult.Status.BUFFER_UNDERFLOW && readSocket() < 0) {
                            throw new EOFException("the peer closed the connection during the TLS handshake");
                        }
                        status = r.getHandshakeStatus();
                    }
                    case NEED_TASK -> status = runTasks();
                    default -> throw new SSLException("unexpected TLS handshake status " + status);
                }
            }
        } catch (SSLException e) {
            sendAlertQuietly();
            throw e;
        }
    }

    /** The engine's session, once the handshake ended. */
    javax.net.ssl.SSLSession session() {
        return engine.getSession();
    }

    @Override
    public int read(ByteBuffer dst) throws IOException {
        synchronized (readLock) {
            while (true) {
                if (appIn.hasRemaining()) {
                    return drainAppIn(dst);
                }
                if (inboundDone) {
                    return -1;
                }
                if (netIn.position() > 0) {
                    // Straight into the caller's buffer when a whole record fits it: no copy through appIn.
                    boolean direct = dst.remaining() >= engine.getSession().getApplicationBufferSize();
                    SSLEngineResult r;
                    if (direct) {
                        netIn.flip();
                        try {
                            r = engine.unwrap(netIn, dst);
                        } finally {
                            netIn.compact();
                        }
                    } else {
                        r = unwrapIntoAppIn();
                    }
                    answerIfAsked(r.getHandshakeStatus());
                    switch (r.getStatus()) {
                        case OK -> {
                            if (direct && r.bytesProduced() > 0) {
                                return r.bytesProduced();
                            }
                            if (r.bytesProduced() > 0 || r.bytesConsumed() > 0) {
                                continue;
                            }
                        }
                        case CLOSED -> {
                            inboundDone = true;
                            if (direct && r.bytesProduced() > 0) {
                                return r.bytesProduced();
                            }
                            continue;
                        }
                        case BUFFER_OVERFLOW -> {
                            growAppIn();
                            continue;
                        }
                        case BUFFER_UNDERFLOW -> growNetInIfFull();
                        default -> throw new SSLException("unexpected TLS status " + r.getStatus());
                    }
                }
                if (readSocket() < 0) {
                    if (netIn.position() > 0) {
                        throw new EOFException("the connection closed in the middle of a TLS record");
                    }
                    // TCP ended without TLS's close: the plane's own goodbye tells an orderly end from a cut one.
                    inboundDone = true;
                    return -1;
                }
            }
        }
    }

    @Override
    public int write(ByteBuffer src) throws IOException {
        int written = 0;
        writeLock.lock();
        try {
            while (src.hasRemaining()) {
                netOut.clear();
                while (src.hasRemaining()) {
                    SSLEngineResult r = engine.wrap(src, netOut);
                    written += r.bytesConsumed();
                    if (r.getStatus() == SSLEngineResult.Status.CLOSED) {
                        throw new SSLException("TLS output is closed");
                    }
                    if (r.getHandshakeStatus() == SSLEngineResult.HandshakeStatus.NEED_TASK) {
                        runTasks();
                    }
                    if (r.getStatus() == SSLEngineResult.Status.BUFFER_OVERFLOW) {
                        if (netOut.position() == 0) {
                            netOut = ByteBuffer.allocate(engine.getSession().getPacketBufferSize() * RECORDS_PER_WRITE);
                            continue;
                        }
                        break;
                    }
                }
                netOut.flip();
                writeFully(netOut);
            }
        } finally {
            writeLock.unlock();
        }
        sendAnswers();
        return written;
    }

    @Override
    public void shutdownOutput() throws IOException {
        writeLock.lock();
        try {
            engine.closeOutbound();
            while (!engine.isOutboundDone()) {
                netOut.clear();
                SSLEngineResult r = engine.wrap(EMPTY, netOut);
                netOut.flip();
                writeFully(netOut);
                if (r.bytesProduced() == 0) {
                    break;
                }
            }
            channel.shutdownOutput();
        } finally {
            writeLock.unlock();
        }
    }

    @Override
    public void close() throws IOException {
        channel.close();
    }

    @Override
    public String toString() {
        return remote;
    }

    // ------------------------------------------------------------------ the engine's bytes

    private int drainAppIn(ByteBuffer dst) {
        int n = Math.min(appIn.remaining(), dst.remaining());
        ByteBuffer slice = appIn.slice();
        slice.limit(n);
        dst.put(slice);
        appIn.position(appIn.position() + n);
        return n;
    }

    /** Unwraps one record of {@code netIn} into {@code appIn} (which must be read out). */
    private SSLEngineResult unwrapIntoAppIn() throws IOException {
        netIn.flip();
        appIn.compact();
        try {
            return engine.unwrap(netIn, appIn);
        } finally {
            appIn.flip();
            netIn.compact();
        }
    }

    private int readSocket() throws IOException {
        growNetInIfFull();
        return channel.read(netIn);
    }

    private void growNetInIfFull() {
        int packet = engine.getSession().getPacketBufferSize();
        if (netIn.remaining() < packet) {
            ByteBuffer bigger = ByteBuffer.allocate(netIn.position() + packet);
            netIn.flip();
            bigger.put(netIn);
            netIn = bigger;
        }
    }

    private void growAppIn() {
        ByteBuffer bigger = ByteBuffer.allocate(appIn.remaining() + engine.getSession().getApplicationBufferSize());
        bigger.put(appIn);
        bigger.flip();
        appIn = bigger;
    }

    /** Sends what the engine has to say during the handshake; the status after it. */
    private SSLEngineResult.HandshakeStatus wrapHandshake() throws IOException {
        writeLock.lock();
        try {
            netOut.clear();
            SSLEngineResult r = engine.wrap(EMPTY, netOut);
            netOut.flip();
            writeFully(netOut);
            if (r.getStatus() == SSLEngineResult.Status.CLOSED && r.getHandshakeStatus() != SSLEngineResult.HandshakeStatus.NEED_WRAP) {
                throw new SSLException("TLS closed during the handshake");
            }
            return r.getHandshakeStatus();
        } finally {
            writeLock.unlock();
        }
    }

    /** A record the reader unwrapped asks for an answer (a key update): it is sent without the reader waiting for it. */
    private void answerIfAsked(SSLEngineResult.HandshakeStatus status) throws IOException {
        if (status == SSLEngineResult.HandshakeStatus.NEED_TASK) {
            status = runTasks();
        }
        if (status == SSLEngineResult.HandshakeStatus.NEED_WRAP) {
            answerPending = true;
            sendAnswers();
        }
    }

    /**
     * Sends what the engine has to answer, if an answer is pending and the write lock is free; a thread that holds the
     * lock calls this after letting go, so a pending answer is never left behind.
     */
    private void sendAnswers() throws IOException {
        while (answerPending && writeLock.tryLock()) {
            try {
                answerPending = false;
                SSLEngineResult.HandshakeStatus status = engine.getHandshakeStatus();
                // Output closed meanwhile (shutdownOutput sent TLS's close): nothing is owed any more.
                while (!engine.isOutboundDone() && (status == SSLEngineResult.HandshakeStatus.NEED_WRAP
                        || status == SSLEngineResult.HandshakeStatus.NEED_TASK)) {
                    if (status == SSLEngineResult.HandshakeStatus.NEED_TASK) {
                        status = runTasks();
                        continue;
                    }
                    netOut.clear();
                    SSLEngineResult r = engine.wrap(EMPTY, netOut);
                    netOut.flip();
                    writeFully(netOut);
                    if (r.getStatus() == SSLEngineResult.Status.CLOSED || r.bytesProduced() == 0) {
                        break;
                    }
                    status = r.getHandshakeStatus();
                }
            } finally {
                writeLock.unlock();
            }
        }
    }

    private SSLEngineResult.HandshakeStatus runTasks() {
        Runnable task;
        while ((task = engine.getDelegatedTask()) != null) {
            task.run();
        }
        return engine.getHandshakeStatus();
    }

    private void writeFully(ByteBuffer bytes) throws IOException {
        while (bytes.hasRemaining()) {
            channel.write(bytes);
        }
    }

    /** After a failed handshake the engine holds an alert for the peer (or owes it TLS's close): send it, so the peer learns why. */
    private void sendAlertQuietly() {
        writeLock.lock();
        try {
            engine.closeOutbound();
            for (int i = 0; i < 4 && !engine.isOutboundDone(); i++) {
                netOut.clear();
                SSLEngineResult r = engine.wrap(EMPTY, netOut);
                netOut.flip();
                writeFully(netOut);
                if (r.bytesProduced() == 0) {
                    break;
                }
            }
        } catch (IOException | RuntimeException ignored) {
            // The connection is refused either way.
        } finally {
            writeLock.unlock();
        }
    }
}
