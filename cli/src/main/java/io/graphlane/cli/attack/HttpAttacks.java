package io.graphlane.cli.attack;

import java.io.IOException;
import java.io.OutputStream;
import java.net.ConnectException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;

/**
 * The attacks a hostile client sends to graphlane's OpenAI HTTP API, each followed by the checks a well client makes
 * ({@code GET /health} answers 200, a one-token completion answers 200): prompts and chat content of megabytes,
 * twenty of them at once, malformed bodies (bad JSON, wrong types, deep nesting), and connections held idle or
 * trickling their headers while the health check must keep answering.
 */
final class HttpAttacks {
    /** How long the health check may take while an attack is on. */
    static final Duration HEALTH_WITHIN = Duration.ofSeconds(5);

    private final URI base;
    private final HttpClient http;
    private final Supplier<Boolean> targetGone;
    private final int connections;
    private final Duration trickle;
    private final InetAddress crowdFrom;

    /**
     * Attacks on {@code base} (scheme, host and port); {@code targetGone} tells whether the target's process has ended
     * (when it is known), {@code connections} how many idle or trickling connections to hold, {@code trickle} how long,
     * {@code crowdFrom} the local address they come from (null: the system's choice), so that the health checks, made
     * from the system's choice, are another client's.
     */
    HttpAttacks(URI base, Supplier<Boolean> targetGone, int connections, Duration trickle, InetAddress crowdFrom) {
        this.base = base;
        this.targetGone = targetGone;
        this.connections = connections;
        this.trickle = trickle;
        this.crowdFrom = crowdFrom;
        this.http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).connectTimeout(Duration.ofSeconds(5)).build();
    }

    /** Every attack once, in order. */
    List<AttackResult> all() {
        List<AttackResult> out = new ArrayList<>();
        out.add(run("oversized-prompt", this::oversizedPrompts));
        out.add(run("oversized-chat-content", this::oversizedChat));
        out.add(run("concurrent-oversized-prompts", this::concurrentOversized));
        out.add(run("malformed-bodies", this::malformedBodies));
        out.add(run("idle-connections", this::idleConnections));
        out.add(run("trickling-headers", this::tricklingHeaders));
        return out;
    }

    /** One attack's outcome so far: what it sent and what was wrong. */
    private static final class Tally {
        int sent;
        final List<String> problems = new ArrayList<>();
    }

    private interface Attack {
        void run(Tally tally) throws Exception;
    }

    private AttackResult run(String name, Attack attack) {
        long start = System.nanoTime();
        Tally tally = new Tally();
        try {
            attack.run(tally);
        } catch (Exception e) {
            tally.problems.add("the attack itself failed: " + e);
        }
        boolean crashed = gone();
        List<String> followUp = crashed ? List.of("the target is gone") : followUp();
        return new AttackResult(name, tally.sent, tally.problems, followUp, crashed, (System.nanoTime() - start) / 1e9);
    }

    /** An 8 MB text prompt of words, and a 7 MB one of a single word: each must be refused with a 4xx. */
    private void oversizedPrompts(Tally t) {
        expect4xx(t, "an 8 MB prompt of words", post("/v1/completions", completion(repeat("lorem ipsum ", 8_000_000))), Duration.ofSeconds(30));
        expect4xx(t, "a 7 MB one-word prompt", post("/v1/completions", completion("x".repeat(7_000_000))), Duration.ofSeconds(30));
    }

    private void oversizedChat(Tally t) {
        String body = "{\"messages\":[{\"role\":\"user\",\"content\":\"" + repeat("lorem ipsum ", 7_000_000) + "\"}],\"max_tokens\":1}";
        expect4xx(t, "a 7 MB chat message", post("/v1/chat/completions", body), Duration.ofSeconds(30));
    }

    /** Twenty 7 MB prompts at once; the health check must answer meanwhile. */
    private void concurrentOversized(Tally t) throws Exception {
        String body = completion(repeat("lorem ipsum ", 7_000_000));
        List<CompletableFuture<HttpResponse<String>>> inFlight = new ArrayList<>();
        for (int i = 0; i < 20; i++) {
            inFlight.add(http.sendAsync(request("/v1/completions").timeout(Duration.ofSeconds(60))
                    .POST(HttpRequest.BodyPublishers.ofString(body)).build(), HttpResponse.BodyHandlers.ofString()));
            t.sent++;
        }
        CompletableFuture<Void> all = CompletableFuture.allOf(inFlight.toArray(CompletableFuture[]::new));
        while (!all.isDone()) {
            healthDuring(t, "while twenty 7 MB prompts are in flight");
            try {
                all.get(500, TimeUnit.MILLISECONDS);
            } catch (java.util.concurrent.TimeoutException stillRunning) {
                // probe again
            } catch (java.util.concurrent.ExecutionException failed) {
                break;
            }
        }
        for (int i = 0; i < inFlight.size(); i++) {
            classify4xx(t, "7 MB prompt " + i + " of 20", inFlight.get(i));
        }
    }

    private void malformedBodies(Tally t) {
        List<String> bodies = new ArrayList<>();
        for (int i = 0; i < 40; i++) {
            if (i % 3 == 1 && i % 2 == 1 && i % 5 == 0) {
                continue; // {"prompt": [1, 2]}: valid
            }
            // Cut short, unbalanced, or followed by commas after the object's end (invalid JSON, though a lenient
            // parser that stops at the first value takes it).
            bodies.add("{\"prompt\": [1, 2" + "]".repeat(i % 3) + "}".repeat(i % 2) + ",".repeat(i % 5));
        }
        bodies.add("{\"prompt\": 5}");
        bodies.add("{\"prompt\": [1], \"max_tokens\": \"many\"}");
        bodies.add("{\"prompt\": [1], \"temperature\": {\"a\": 1}}");
        bodies.add("{\"prompt\": [-1]}");
        bodies.add("[" .repeat(100_000) + "]".repeat(100_000));
        bodies.add("{\"prompt\":" + "[".repeat(100_000) + "1" + "]".repeat(100_000) + "}");
        bodies.add("\u0000\u0001\u0002garbage");
        bodies.add("");
        for (String b : bodies) {
            expect4xx(t, "a malformed body of " + b.length() + " bytes", post("/v1/completions", b), Duration.ofSeconds(10));
        }
    }

    /** Connections that send nothing, held open while the health check must answer. */
    private void idleConnections(Tally t) throws IOException {
        List<Socket> held = new ArrayList<>();
        try {
            for (int i = 0; i < connections; i++) {
                held.add(open());
                t.sent++;
            }
            healthDuring(t, "with " + connections + " idle connections open");
        } finally {
            closeAll(held);
        }
    }

    /** Connections that send a request head one header line every 2 s, held while the health check must answer. */
    private void tricklingHeaders(Tally t) throws Exception {
        List<Socket> held = new ArrayList<>();
        try {
            for (int i = 0; i < connections; i++) {
                Socket s = open();
                try {
                    s.getOutputStream().write(("GET /health HTTP/1.1\r\nHost: " + base.getHost() + "\r\n").getBytes(StandardCharsets.US_ASCII));
                } catch (IOException cut) {
                    // the server may refuse it at once
                }
                held.add(s);
                t.sent++;
            }
            long end = System.nanoTime() + trickle.toNanos();
            int line = 0;
            while (System.nanoTime() < end) {
                healthDuring(t, "with " + connections + " connections trickling header lines");
                for (Socket s : held) {
                    try {
                        OutputStream out = s.getOutputStream();
                        out.write(("X-Trickle-" + line + ": 1\r\n").getBytes(StandardCharsets.US_ASCII));
                    } catch (IOException cut) {
                        // cut by the server: what it should do
                    }
                }
                line++;
                Thread.sleep(2_000); // the attack's own pace: one header line per connection every 2 s
            }
        } finally {
            closeAll(held);
        }
    }

    /** The follow-up a well client makes: the health check, then a one-token completion. */
    List<String> followUp() {
        List<String> failures = new ArrayList<>();
        try {
            HttpResponse<String> health = http.send(request("/health").timeout(Duration.ofSeconds(10)).GET().build(),
                    HttpResponse.BodyHandlers.ofString());
            if (health.statusCode() != 200) {
                failures.add("GET /health answered " + health.statusCode() + ": " + shorten(health.body()));
            }
        } catch (Exception e) {
            failures.add("GET /health failed: " + e);
        }
        try {
            HttpResponse<String> c = http.send(request("/v1/completions").timeout(Duration.ofSeconds(60))
                    .POST(HttpRequest.BodyPublishers.ofString("{\"prompt\":[1],\"max_tokens\":1}")).build(),
                    HttpResponse.BodyHandlers.ofString());
            if (c.statusCode() != 200) {
                failures.add("a one-token completion answered " + c.statusCode() + ": " + shorten(c.body()));
            }
        } catch (Exception e) {
            failures.add("a one-token completion failed: " + e);
        }
        return failures;
    }

    /** Whether the target is gone: its process ended, or nothing accepts connections on its port. */
    boolean gone() {
        if (targetGone.get()) {
            return true;
        }
        try (Socket s = new Socket()) {
            s.connect(new InetSocketAddress(base.getHost(), base.getPort()), 5_000);
            return false;
        } catch (ConnectException refused) {
            return true;
        } catch (IOException slow) {
            return false; // a full accept queue is not a crash; the follow-up says whether it serves
        }
    }

    private void healthDuring(Tally t, String when) {
        try {
            HttpResponse<String> r = http.send(request("/health").timeout(HEALTH_WITHIN).GET().build(), HttpResponse.BodyHandlers.ofString());
            if (r.statusCode() != 200) {
                t.problems.add("GET /health answered " + r.statusCode() + " " + when);
            }
        } catch (Exception e) {
            t.problems.add("GET /health got no answer within " + HEALTH_WITHIN.toSeconds() + " s " + when + ": " + e);
        }
    }

    private void expect4xx(Tally t, String what, HttpRequest request, Duration within) {
        t.sent++;
        classify4xx(t, what, http.sendAsync(HttpRequest.newBuilder(request, (n, v) -> true).timeout(within).build(),
                HttpResponse.BodyHandlers.ofString()));
    }

    private static void classify4xx(Tally t, String what, CompletableFuture<HttpResponse<String>> answer) {
        try {
            HttpResponse<String> r = answer.get(120, TimeUnit.SECONDS);
            if (r.statusCode() < 400 || r.statusCode() >= 500) {
                t.problems.add(what + " was answered " + r.statusCode() + ", expected a 4xx: " + shorten(r.body()));
            }
        } catch (Exception e) {
            t.problems.add(what + " got no answer: " + e);
        }
    }

    private HttpRequest post(String path, String body) {
        return request(path).POST(HttpRequest.BodyPublishers.ofString(body)).build();
    }

    private HttpRequest.Builder request(String path) {
        return HttpRequest.newBuilder(base.resolve(path)).header("Content-Type", "application/json");
    }

    /** A crowd connection, from {@code crowdFrom}. */
    private Socket open() throws IOException {
        Socket s = new Socket();
        if (crowdFrom != null) {
            s.bind(new InetSocketAddress(crowdFrom, 0));
        }
        s.connect(new InetSocketAddress(base.getHost(), base.getPort()), 5_000);
        return s;
    }

    private static void closeAll(List<Socket> sockets) {
        for (Socket s : sockets) {
            try {
                s.close();
            } catch (IOException ignored) {
                // closing anyway
            }
        }
    }

    private static String completion(String prompt) {
        return "{\"prompt\":\"" + prompt + "\",\"max_tokens\":1}";
    }

    /** {@code unit} repeated to {@code bytes} bytes (ASCII). */
    static String repeat(String unit, int bytes) {
        StringBuilder b = new StringBuilder(bytes);
        while (b.length() + unit.length() <= bytes) {
            b.append(unit);
        }
        return b.toString();
    }

    private static String shorten(String s) {
        return s.length() <= 200 ? s : s.substring(0, 200) + "...";
    }
}
