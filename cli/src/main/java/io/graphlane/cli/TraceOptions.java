package io.graphlane.cli;

import io.graphlane.actors.lane.WorkTracing;
import io.graphlane.backend.cpu.CpuWork;
import io.graphlane.core.trace.ChromeTraceWriter;
import io.graphlane.core.trace.TraceBuffer;
import io.graphlane.core.trace.TraceRecorder;
import java.nio.file.Files;
import java.nio.file.Path;
import picocli.CommandLine.Option;

/**
 * The {@code --trace FILE} option any command can mix in: lanes record their events while the
 * command runs and the command writes them as Chrome trace-event JSON (opens in Perfetto).
 */
public final class TraceOptions {

    /** Most events one trace keeps; later events are counted as dropped. */
    public static final int DEFAULT_CAPACITY = 1 << 21;

    @Option(names = "--trace", paramLabel = "FILE",
            description = "Write a Chrome trace-event JSON file of what the lanes did (open it in https://ui.perfetto.dev): "
                    + "one track per lane, flow arrows for cross-lane waits. Tracing slows the traced path down.")
    Path file;

    /** Whether {@code --trace} was given. */
    public boolean enabled() {
        return file != null;
    }

    /** The trace file, or null without {@code --trace}. */
    public Path file() {
        return file;
    }

    /**
     * A recorder for the run: a bounded buffer with {@code --trace}, {@link TraceRecorder#DISABLED} without.
     *
     * @throws IllegalArgumentException if the trace file's folder does not exist
     */
    public TraceRecorder recorder() {
        if (file == null) {
            return TraceRecorder.DISABLED;
        }
        Path parent = file.toAbsolutePath().getParent();
        if (parent != null && !Files.isDirectory(parent)) {
            throw new IllegalArgumentException("--trace " + file + ": folder " + parent + " does not exist");
        }
        return new TraceBuffer(DEFAULT_CAPACITY);
    }

    /** Writes what {@code recorder} kept to the trace file; returns the number of trace entries (0 without {@code --trace}). */
    public int write(TraceRecorder recorder) {
        if (file == null) {
            return 0;
        }
        return ChromeTraceWriter.write(recorder.events(), file);
    }

    /** Instruments CPU work so the trace shows when it really started on its lane's worker thread. */
    public static WorkTracing<CpuWork> cpuWorkTracing() {
        return (work, started) -> () -> {
            started.accept(System.nanoTime());
            work.run();
        };
    }
}
