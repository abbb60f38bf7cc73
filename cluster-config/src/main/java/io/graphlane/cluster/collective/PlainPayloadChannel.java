package io.graphlane.cluster.collective;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;

/** A payload socket without TLS: the bytes travel as written, unencrypted and unauthenticated. */
final class PlainPayloadChannel implements PayloadChannel {
    private final SocketChannel channel;
    private final String remote;

    PlainPayloadChannel(SocketChannel channel, String remote) {
        this.channel = channel;
        this.remote = remote;
    }

    @Override
    public int read(ByteBuffer dst) throws IOException {
        return channel.read(dst);
    }

    @Override
    public int write(ByteBuffer src) throws IOException {
        return channel.write(src);
    }

    @Override
    public void shutdownOutput() throws IOException {
        channel.shutdownOutput();
    }

    @Override
    public void close() throws IOException {
        channel.close();
    }

    @Override
    public String toString() {
        return remote;
    }
}
