package io.graphlane.cluster.collective;

import java.io.IOException;
import java.nio.ByteBuffer;

/**
 * One payload socket between two ranks as the plane's reader and writer threads see it: plain TCP
 * ({@link PlainPayloadChannel}) or TLS over it ({@link TlsPayloadChannel}). Both are blocking. One thread may read while
 * another writes; reads and writes are each called from one thread at a time. {@link #toString()} names the remote
 * address, for the reason a loss gives.
 */
interface PayloadChannel {
    /** Reads at least one byte into {@code dst} (it has room), blocking until some arrived; -1 once the peer ended its output. */
    int read(ByteBuffer dst) throws IOException;

    /** Writes some of {@code src}'s bytes, blocking until the socket took them; the count written. */
    int write(ByteBuffer src) throws IOException;

    /** Ends this side's output once what was written has been sent; the peer's reads then end with -1. */
    void shutdownOutput() throws IOException;

    /** Closes the socket at once; a read or write blocked on it fails. */
    void close() throws IOException;

    /** Reads {@code into} fully from {@code ch}; false at EOF. */
    static boolean readFully(PayloadChannel ch, ByteBuffer into) throws IOException {
        while (into.hasRemaining()) {
            if (ch.read(into) < 0) {
                return false;
            }
        }
        return true;
    }
}
