package io.graphlane.cluster.collective;

import com.typesafe.config.Config;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.channels.SocketChannel;
import javax.net.ssl.SSLEngine;
import javax.net.ssl.SSLException;
import org.apache.pekko.actor.ActorSystem;
import org.apache.pekko.actor.ExtendedActorSystem;
import org.apache.pekko.remote.artery.tcp.SSLEngineProvider;
import org.apache.pekko.remote.artery.tcp.SSLEngineProviderSetup;
import scala.Option;

/**
 * TLS for the payload sockets with Artery's own TLS settings: the engines come from the same {@link SSLEngineProvider}
 * Artery uses ({@code pekko.remote.artery.ssl.ssl-engine-provider}, by default {@code ConfigSSLEngineProvider} over
 * {@code pekko.remote.artery.ssl.config-ssl-engine}: its key store, trust store, protocol and cipher suites), so a
 * rank's peer must hold a certificate the cluster's trust store trusts. The accepting side always requires the
 * connecting side's certificate (mutual authentication), whatever {@code require-mutual-authentication} says for
 * Artery, and both sides run the provider's session checks (host name verification when it is on).
 */
final class PayloadTls {
    private final SSLEngineProvider provider;

    PayloadTls(SSLEngineProvider provider) {
        this.provider = provider;
    }

    /** The payload plane's TLS when {@code pekko.remote.artery.transport = tls-tcp} on {@code system}, else null. */
    static PayloadTls of(ActorSystem system) {
        Config config = system.settings().config();
        if (!"tls-tcp".equals(config.getString("pekko.remote.artery.transport"))) {
            return null;
        }
        // As Artery finds its provider: a setup given when the system was made, else the configured class.
        Option<SSLEngineProviderSetup> setup = system.settings().setup().get(scala.reflect.ClassTag$.MODULE$.apply(SSLEngineProviderSetup.class));
        if (setup.isDefined()) {
            return new PayloadTls(setup.get().sslEngineProvider().apply((ExtendedActorSystem) system));
        }
        String className = config.getString("pekko.remote.artery.ssl.ssl-engine-provider");
        try {
            Class<?> type = Class.forName(className, true, ((ExtendedActorSystem) system).dynamicAccess().classLoader());
            return new PayloadTls((SSLEngineProvider) type.getConstructor(ActorSystem.class).newInstance(system));
        } catch (ReflectiveOperationException | ClassCastException e) {
            Throwable cause = e instanceof java.lang.reflect.InvocationTargetException i && i.getCause() != null ? i.getCause() : e;
            throw new IllegalArgumentException("the payload sockets use Artery's TLS, but pekko.remote.artery.ssl.ssl-engine-provider '"
                    + className + "' could not be created: " + cause, cause);
        }
    }

    /** TLS as the connecting side to {@code host:port} on {@code channel}; the handshake done and the server checked. */
    TlsPayloadChannel client(SocketChannel channel, String host, int port) throws IOException {
        SSLEngine engine = engine(() -> provider.createClientSSLEngine(host, port));
        TlsPayloadChannel tls = new TlsPayloadChannel(channel, engine, host + ":" + port);
        tls.handshake();
        Option<Throwable> refused = provider.verifyServerSession(host, tls.session());
        if (refused.isDefined()) {
            throw new SSLException("the TLS session with " + host + ":" + port + " was refused: " + refused.get().getMessage(), refused.get());
        }
        return tls;
    }

    /** TLS as the accepting side on {@code channel}, requiring the peer's certificate; the handshake done and the client checked. */
    TlsPayloadChannel server(SocketChannel channel) throws IOException {
        InetSocketAddress local = (InetSocketAddress) channel.getLocalAddress();
        InetSocketAddress remote = (InetSocketAddress) channel.getRemoteAddress();
        SSLEngine engine = engine(() -> provider.createServerSSLEngine(local.getHostString(), local.getPort()));
        engine.setNeedClientAuth(true);
        TlsPayloadChannel tls = new TlsPayloadChannel(channel, engine, String.valueOf(remote));
        tls.handshake();
        Option<Throwable> refused = provider.verifyClientSession(remote.getHostString(), tls.session());
        if (refused.isDefined()) {
            throw new SSLException("the TLS session from " + remote + " was refused: " + refused.get().getMessage(), refused.get());
        }
        return tls;
    }

    /** An engine from the provider; a provider that cannot make one (a key store that does not load) fails this connection. */
    private static SSLEngine engine(java.util.function.Supplier<SSLEngine> make) throws SSLException {
        try {
            return make.get();
        } catch (RuntimeException e) {
            throw new SSLException("no TLS engine for the payload socket (pekko.remote.artery.ssl): " + e.getMessage(), e);
        }
    }
}
