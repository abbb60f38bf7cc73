package io.graphlane.cli.attack;

import io.graphlane.core.GraphlaneException;
import java.io.PrintWriter;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.UnknownHostException;
import java.net.URI;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.OptionalLong;
import java.util.concurrent.Callable;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * {@code graphlane attack}: sends a running server or node what a hostile client or peer would, checks after each
 * attack that it still serves, and exits 1 if it did not hold up.
 */
@Command(name = "attack", mixinStandardHelpOptions = true,
        description = "Attack a running graphlane server (--target URL: megabyte prompts, malformed bodies, idle and trickling"
                + " connections) and/or a node's Artery port (--artery HOST:PORT with --management URL: hostile frames, garbage,"
                + " silence), checking after each attack that it still serves. Exits 1 on a crash, a failed follow-up or a wrong"
                + " answer. Only against your own servers.")
public final class AttackCommand implements Callable<Integer> {

    @Spec
    CommandSpec spec;

    @Option(names = "--target", paramLabel = "URL", description = "The OpenAI API to attack, e.g. http://127.0.0.1:8000.")
    URI target;

    @Option(names = "--artery", paramLabel = "HOST:PORT", description = "A node's Artery address to attack as a hostile peer.")
    String artery;

    @Option(names = "--management", paramLabel = "URL", description = "That node's Management URL (e.g. http://127.0.0.1:8558),"
            + " asked after each peer attack; required with --artery.")
    URI management;

    @Option(names = "--pid", paramLabel = "PID", description = "The target's process id on this host: a crash is its end, and its"
            + " resident memory is sampled (Linux).")
    Long pid;

    @Option(names = "--seconds", paramLabel = "S", defaultValue = "0",
            description = "Repeat the suite until S seconds have passed (default ${DEFAULT-VALUE}: once).")
    long seconds;

    @Option(names = "--connections", paramLabel = "N", defaultValue = "1100",
            description = "Idle and trickling connections held at once (default ${DEFAULT-VALUE}).")
    int connections;

    @Option(names = "--trickle-seconds", paramLabel = "S", defaultValue = "12",
            description = "How long the trickling connections send a header line every 2 s (default ${DEFAULT-VALUE}).")
    long trickleSeconds;

    @Option(names = "--silence-seconds", paramLabel = "S", defaultValue = "12",
            description = "How long the silent peer connection is held (default ${DEFAULT-VALUE}).")
    long silenceSeconds;

    @Option(names = "--crowd-from", paramLabel = "ADDRESS", description = "The local address the idle and trickling connections"
            + " come from (default: 127.0.0.2 against a loopback target, so that the health checks from 127.0.0.1 are another"
            + " client's and a per-client connection cap does not refuse them; otherwise the system's choice).")
    String crowdFrom;

    @Option(names = "--json", description = "Print one JSON object instead of a table.")
    boolean json;

    @Override
    public Integer call() throws Exception {
        if (target == null && artery == null) {
            throw new GraphlaneException("name what to attack: --target URL (the OpenAI API) and/or --artery HOST:PORT (a node)");
        }
        if (artery != null && management == null) {
            throw new GraphlaneException("--artery needs --management URL: the node's Management port tells whether it held up");
        }
        if (connections < 1 || seconds < 0 || trickleSeconds < 0 || silenceSeconds < 0) {
            throw new GraphlaneException("--connections must be >= 1 and --seconds, --trickle-seconds, --silence-seconds >= 0; got "
                    + connections + ", " + seconds + ", " + trickleSeconds + ", " + silenceSeconds);
        }
        ResidentMemory memory = pid == null ? null : new ResidentMemory(pid);
        if (memory != null && !memory.alive()) {
            throw new GraphlaneException("--pid " + pid + ": no such process on this host");
        }
        HttpAttacks http = target == null ? null : new HttpAttacks(baseOf(target), () -> memory != null && !memory.alive(),
                connections, Duration.ofSeconds(trickleSeconds), crowdAddress(target));
        ArteryAttacks peer = artery == null ? null : new ArteryAttacks(address(artery), management,
                () -> memory != null && !memory.alive(), Duration.ofSeconds(silenceSeconds));

        AtomicLong peak = new AtomicLong(-1);
        AtomicBoolean sampling = new AtomicBoolean(true);
        Thread sampler = new Thread(() -> {
            while (sampling.get() && memory != null) {
                memory.currentBytes().ifPresent(b -> peak.accumulateAndGet(b, Math::max));
                try {
                    Thread.sleep(100); // the sampling period
                } catch (InterruptedException e) {
                    return;
                }
            }
        }, "graphlane-attack-rss");
        sampler.setDaemon(true);
        sampler.start();

        long start = System.nanoTime();
        long end = start + Duration.ofSeconds(seconds).toNanos();
        List<AttackResult> results = new ArrayList<>();
        int rounds = 0;
        do {
            rounds++;
            if (http != null) {
                results.addAll(http.all());
            }
            if (peer != null) {
                results.addAll(peer.all());
            }
        } while (System.nanoTime() < end && results.stream().noneMatch(AttackResult::crashed));
        sampling.set(false);
        sampler.interrupt();
        sampler.join();
        AttackReport report = new AttackReport(rounds, (System.nanoTime() - start) / 1e9, results,
                peak.get() < 0 ? OptionalLong.empty() : OptionalLong.of(peak.get()),
                memory == null ? OptionalLong.empty() : memory.peakBytes());
        PrintWriter out = spec.commandLine().getOut();
        out.print(json ? report.toJson() + "\n" : report.toText());
        out.flush();
        return report.passed() ? 0 : 1;
    }

    private static URI baseOf(URI url) {
        if (url.getHost() == null || url.getPort() < 0 || !"http".equals(url.getScheme())) {
            throw new GraphlaneException("--target: expected http://HOST:PORT, got " + url);
        }
        return URI.create("http://" + url.getHost() + ":" + url.getPort() + "/");
    }

    /**
     * Where the crowd comes from: {@code --crowd-from}, else 127.0.0.2 against an IPv4 loopback target where this host
     * has it (Linux routes all of 127/8 to loopback), else null: the system's choice.
     */
    private InetAddress crowdAddress(URI target) throws UnknownHostException {
        if (crowdFrom != null) {
            InetAddress chosen = InetAddress.getByName(crowdFrom);
            if (!bindable(chosen)) {
                throw new GraphlaneException("--crowd-from " + crowdFrom + ": not an address of this host");
            }
            return chosen;
        }
        InetAddress host = InetAddress.getByName(target.getHost());
        InetAddress second = InetAddress.getByName("127.0.0.2");
        return host instanceof java.net.Inet4Address && host.isLoopbackAddress() && bindable(second) ? second : null;
    }

    private static boolean bindable(InetAddress address) {
        try (java.net.Socket probe = new java.net.Socket()) {
            probe.bind(new InetSocketAddress(address, 0));
            return true;
        } catch (java.io.IOException e) {
            return false;
        }
    }

    private static InetSocketAddress address(String hostPort) {
        int colon = hostPort.lastIndexOf(':');
        if (colon <= 0 || colon == hostPort.length() - 1 || !hostPort.substring(colon + 1).chars().allMatch(Character::isDigit)) {
            throw new GraphlaneException("--artery: expected HOST:PORT, got '" + hostPort + "'");
        }
        return new InetSocketAddress(hostPort.substring(0, colon), Integer.parseInt(hostPort.substring(colon + 1)));
    }
}
