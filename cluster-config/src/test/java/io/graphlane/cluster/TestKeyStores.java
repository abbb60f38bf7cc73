package io.graphlane.cluster;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.KeyStore;
import java.util.ArrayList;
import java.util.List;

/**
 * PKCS12 key stores made at test time with the JDK's keytool (self-signed EC key pairs, password {@code changeit}),
 * so no secret is checked in, and the Artery TLS settings that use them.
 */
public final class TestKeyStores {
    public static final String PASSWORD = "changeit";

    private TestKeyStores() {
    }

    /** A key store at {@code store} holding one new self-signed key pair for {@code commonName}, alias {@code node}. */
    public static Path selfSigned(Path store, String commonName) throws IOException, InterruptedException {
        keytool("-genkeypair", "-alias", "node", "-keyalg", "EC", "-groupname", "secp256r1", "-validity", "2",
                "-dname", "CN=" + commonName, "-storetype", "PKCS12", "-keystore", store.toString(),
                "-storepass", PASSWORD, "-keypass", PASSWORD);
        if (Files.size(store) == 0) {
            throw new IOException("keytool wrote an empty key store at " + store);
        }
        return store;
    }

    /** Adds the certificate of {@code from}'s key pair to {@code to} as a trusted entry named {@code alias}. */
    public static void trust(Path to, Path from, String alias) throws IOException, GeneralSecurityException {
        KeyStore source = load(from);
        KeyStore target = load(to);
        target.setCertificateEntry(alias, source.getCertificate("node"));
        try (OutputStream out = Files.newOutputStream(to)) {
            target.store(out, PASSWORD.toCharArray());
        }
    }

    private static KeyStore load(Path store) throws IOException, GeneralSecurityException {
        KeyStore keys = KeyStore.getInstance("PKCS12");
        try (InputStream in = Files.newInputStream(store)) {
            keys.load(in, PASSWORD.toCharArray());
        }
        return keys;
    }

    /** {@code pekko.remote.artery.ssl.config-ssl-engine} settings with {@code keyStore} and {@code trustStore}. */
    public static Config configSslEngine(Path keyStore, Path trustStore) {
        return ConfigFactory.parseString("key-store = \"" + keyStore + "\"\ntrust-store = \"" + trustStore + "\"\n"
                + "key-store-password = " + PASSWORD + "\nkey-password = " + PASSWORD + "\ntrust-store-password = " + PASSWORD + "\n");
    }

    private static void keytool(String... args) throws IOException, InterruptedException {
        List<String> command = new ArrayList<>();
        command.add(Path.of(System.getProperty("java.home"), "bin", "keytool").toString());
        command.addAll(List.of(args));
        Process keytool = new ProcessBuilder(command).redirectErrorStream(true).start();
        String output = new String(keytool.getInputStream().readAllBytes());
        if (keytool.waitFor() != 0) {
            throw new IOException("keytool " + String.join(" ", args) + " failed: " + output);
        }
    }
}
