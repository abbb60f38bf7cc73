package io.graphlane.cli.attack;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.InputStream;
import java.net.ConnectException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.function.Supplier;

/**
 * A hostile peer against a node's Artery port, without the cluster's keys: frame lengths of 0, -1, -5 and 2^31-1 on
 * each of Artery's three streams, a truncated connection header, garbage, and a silent connection held open. The
 * follow-up asks the node's Management port: {@code /alive} answers 200 and {@code /cluster/members} lists every member
 * Up and none unreachable.
 */
final class ArteryAttacks {
    /** Longer than the failure detector's acceptable heartbeat pause (3 s in every profile). */
    static final Duration SETTLE = Duration.ofSeconds(6);
    private final InetSocketAddress artery;
    private final URI management;
    private final Supplier<Boolean> targetGone;
    private final Duration silence;
    private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
    private final ObjectMapper json = new ObjectMapper();

    ArteryAttacks(InetSocketAddress artery, URI management, Supplier<Boolean> targetGone, Duration silence) {
        this.artery = artery;
        this.management = management;
        this.targetGone = targetGone;
        this.silence = silence;
    }

    /** The whole suite once. */
    List<AttackResult> all() {
        List<AttackResult> out = new ArrayList<>();
        for (int length : new int[] {0, -1, -5, Integer.MAX_VALUE}) {
            out.add(run("artery-frame-length-" + length, () -> {
                List<Socket> sent = new ArrayList<>();
                for (int stream = 1; stream <= 3; stream++) {
                    ByteBuffer b = ByteBuffer.allocate(9).order(ByteOrder.LITTLE_ENDIAN);
                    b.put(new byte[] {'A', 'K', 'K', 'A', (byte) stream}).putInt(length);
                    sent.add(send(b.array()));
                }
                return sent;
            }));
        }
        out.add(run("artery-truncated-header", () -> List.of(send(new byte[] {'A', 'K', 'K'}))));
        out.add(run("artery-garbage", () -> {
            byte[] noise = new byte[4096];
            new Random(1).nextBytes(noise);
            return List.of(send(noise));
        }));
        out.add(run("artery-silence", () -> {
            Socket s = open();
            try {
                s.setSoTimeout((int) silence.toMillis());
                s.getInputStream().read();
            } catch (SocketTimeoutException stillOpen) {
                // held for the whole silence: a node may keep a silent TLS connection; the follow-up decides
            }
            return List.of(s);
        }));
        // A node whose inbound stream broke stops hearing its peers' heartbeats: the failure detector marks them
        // unreachable only after its acceptable pause, so ask once more past it.
        out.add(run("artery-settled", () -> {
            try {
                Thread.sleep(SETTLE.toMillis()); // waits out the failure detector's pause, not an ordering
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            return List.of();
        }));
        return out;
    }

    private interface Attack {
        List<Socket> send() throws IOException;
    }

    private AttackResult run(String name, Attack attack) {
        long start = System.nanoTime();
        List<String> problems = new ArrayList<>();
        int sent = 0;
        try {
            List<Socket> sockets = attack.send();
            sent = sockets.size();
            for (Socket s : sockets) {
                s.close();
            }
        } catch (IOException e) {
            problems.add("the attack itself failed: " + e);
        }
        boolean crashed = gone();
        List<String> followUp = crashed ? List.of("the node is gone") : followUp();
        return new AttackResult(name, sent, problems, followUp, crashed, (System.nanoTime() - start) / 1e9);
    }

    private Socket send(byte[] bytes) throws IOException {
        Socket s = open();
        try {
            s.getOutputStream().write(bytes);
            s.setSoTimeout(1_000);
            drain(s.getInputStream());
        } catch (IOException cut) {
            // the node cut it: what it should do
        }
        return s;
    }

    /** Reads until the node ends the connection or a second passes. */
    private static void drain(InputStream in) throws IOException {
        byte[] sink = new byte[1024];
        try {
            while (in.read(sink) >= 0) {
                // discard (a TLS alert, say)
            }
        } catch (SocketTimeoutException stillOpen) {
            // the node keeps it open for now
        }
    }

    private Socket open() throws IOException {
        Socket s = new Socket();
        s.connect(artery, 5_000);
        return s;
    }

    /** The node's own view after an attack: alive, every member Up, none unreachable. */
    List<String> followUp() {
        List<String> failures = new ArrayList<>();
        try {
            HttpResponse<String> alive = get("/alive");
            if (alive.statusCode() != 200) {
                failures.add("GET /alive answered " + alive.statusCode());
            }
            HttpResponse<String> members = get("/cluster/members");
            if (members.statusCode() != 200) {
                failures.add("GET /cluster/members answered " + members.statusCode());
            } else {
                JsonNode m = json.readTree(members.body());
                if (m.path("unreachable").size() > 0) {
                    failures.add("members unreachable: " + m.get("unreachable"));
                }
                for (JsonNode member : m.path("members")) {
                    if (!"Up".equals(member.path("status").asText())) {
                        failures.add("member " + member.path("node").asText() + " is " + member.path("status").asText());
                    }
                }
            }
        } catch (Exception e) {
            failures.add("the Management port gave no answer: " + e);
        }
        return failures;
    }

    private HttpResponse<String> get(String path) throws IOException, InterruptedException {
        return http.send(HttpRequest.newBuilder(management.resolve(path)).timeout(Duration.ofSeconds(10)).GET().build(),
                HttpResponse.BodyHandlers.ofString());
    }

    boolean gone() {
        if (targetGone.get()) {
            return true;
        }
        try (Socket s = new Socket()) {
            s.connect(artery, 5_000);
            return false;
        } catch (ConnectException refused) {
            return true;
        } catch (IOException slow) {
            return false;
        }
    }
}
