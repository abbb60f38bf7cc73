package io.graphlane.cli.bench;

import io.graphlane.core.GraphlaneException;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

/**
 * The child JVMs of a cross-node benchmark, one per rank, started from this JVM's own class path: the lines each one
 * prints that start with the benchmark's prefix are queued for {@link #expect}, every other line goes to {@code err}
 * tagged with its rank. Every child is stopped on every path: by {@link #close}, and on Ctrl-C (a shutdown hook); a
 * whole run past its deadline is called hung.
 */
final class RankProcesses implements AutoCloseable {

    /** A line rank {@code rank} printed, the prefix taken off; {@code exited} once its output ended. */
    record Line(int rank, String text) {
    }

    private static final String EXITED = "exited";

    private final String bench;
    private final String prefix;
    private final long deadlineSeconds;
    private final long deadline;
    private final PrintWriter err;
    private final List<Process> ranks = new ArrayList<>();
    private final BlockingQueue<Line> lines = new LinkedBlockingQueue<>();
    private final Thread reaper;

    /**
     * Children of benchmark {@code bench} (as errors name it) whose lines starting with {@code prefix} are its protocol;
     * the whole run may take {@code deadlineSeconds}.
     */
    RankProcesses(String bench, String prefix, long deadlineSeconds, PrintWriter err) {
        this.bench = bench;
        this.prefix = prefix;
        this.deadlineSeconds = deadlineSeconds;
        this.deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(deadlineSeconds);
        this.err = err;
        this.reaper = new Thread(this::destroyAll, bench.replace(' ', '-') + "-reaper");
        Runtime.getRuntime().addShutdownHook(reaper);
    }

    /** {@code java -Xmx<heapMb>m -XX:+UseParallelGC -cp <this class path> io.graphlane.cli.GraphlaneCli <args>}. */
    static List<String> graphlane(long heapMb, List<String> args) {
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        List<String> command = new ArrayList<>(List.of(java, "-Xmx" + heapMb + "m", "-XX:+UseParallelGC"));
        if (ModuleLayer.boot().findModule("jdk.incubator.vector").isPresent()) {
            // The ranks run the same CPU kernels as this JVM (the SIMD ones where it has the Vector API).
            command.addAll(List.of("--add-modules", "jdk.incubator.vector"));
        }
        command.addAll(List.of("-cp", System.getProperty("java.class.path"), "io.graphlane.cli.GraphlaneCli"));
        command.addAll(args);
        return command;
    }

    /** Starts rank {@code rank} (the next one: ranks start in order from 0) as {@code command}. */
    Process start(int rank, List<String> command) throws IOException {
        return start(rank, command, java.util.Map.of());
    }

    /** As {@link #start(int, List)}, with {@code environment} added to this process's environment. */
    Process start(int rank, List<String> command, java.util.Map<String, String> environment) throws IOException {
        if (rank != ranks.size()) {
            throw new IllegalStateException("rank " + rank + " started after " + ranks.size() + " ranks");
        }
        ProcessBuilder builder = new ProcessBuilder(command).redirectError(ProcessBuilder.Redirect.INHERIT);
        builder.environment().putAll(environment);
        Process p = builder.start();
        ranks.add(p);
        Thread reader = new Thread(() -> {
            try (BufferedReader out = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8))) {
                String line;
                while ((line = out.readLine()) != null) {
                    if (line.startsWith(prefix)) {
                        lines.add(new Line(rank, line.substring(prefix.length())));
                    } else {
                        synchronized (err) {
                            err.println("[rank " + rank + "] " + line);
                            err.flush();
                        }
                    }
                }
            } catch (IOException ignored) {
                // The rank is gone; expect() notices.
            }
            lines.add(new Line(rank, EXITED));
        }, bench.replace(' ', '-') + "-rank-" + rank);
        reader.setDaemon(true);
        reader.start();
        return p;
    }

    /** The process of rank {@code rank}. */
    Process process(int rank) {
        return ranks.get(rank);
    }

    /** Every rank's process, in rank order. */
    List<Process> processes() {
        return List.copyOf(ranks);
    }

    /** The seconds left before the run is called hung. */
    long secondsLeft() {
        return Math.max(0, TimeUnit.NANOSECONDS.toSeconds(deadline - System.nanoTime()));
    }

    /**
     * The next protocol line of any rank, which must start with {@code what}.
     *
     * @throws GraphlaneException if none comes before the deadline, a rank exited first, or a rank said something else
     */
    Line expect(String what) throws InterruptedException {
        Line l = lines.poll(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
        if (l == null) {
            throw new GraphlaneException(bench + ": no '" + what.trim() + "' from the ranks within " + deadlineSeconds + " s");
        }
        if (l.text().equals(EXITED)) {
            Process p = ranks.get(l.rank());
            p.waitFor(10, TimeUnit.SECONDS);
            throw new GraphlaneException(bench + ": rank " + l.rank() + " exited (status " + (p.isAlive() ? "unknown" : p.exitValue())
                    + ") before reporting its " + what.trim() + "; see its log lines above");
        }
        if (!l.text().startsWith(what)) {
            throw new GraphlaneException(bench + ": rank " + l.rank() + " said '" + l.text() + "', expected its " + what.trim());
        }
        return l;
    }

    /** Stops every rank (forcibly) and waits for each a little. */
    @Override
    public void close() {
        destroyAll();
        try {
            Runtime.getRuntime().removeShutdownHook(reaper);
        } catch (IllegalStateException shuttingDown) {
            // The hook is running or has run: the ranks are gone either way.
        }
    }

    private void destroyAll() {
        for (Process p : ranks) {
            p.destroyForcibly();
        }
        for (Process p : ranks) {
            try {
                p.waitFor(10, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return;
            }
        }
    }
}
