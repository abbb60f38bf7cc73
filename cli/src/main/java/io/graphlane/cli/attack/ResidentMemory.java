package io.graphlane.cli.attack;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.OptionalLong;

/**
 * The resident memory of a local process, read from {@code /proc/PID/status}: its peak over the process's life
 * ({@code VmHWM}) and its current size ({@code VmRSS}). Linux only; empty elsewhere or once the process is gone.
 */
final class ResidentMemory {
    private final long pid;

    ResidentMemory(long pid) {
        this.pid = pid;
    }

    /** The process's peak resident set so far, in bytes. */
    OptionalLong peakBytes() {
        return field("VmHWM:");
    }

    /** The process's resident set now, in bytes. */
    OptionalLong currentBytes() {
        return field("VmRSS:");
    }

    /** Whether the process is still running. */
    boolean alive() {
        return ProcessHandle.of(pid).map(ProcessHandle::isAlive).orElse(false);
    }

    private OptionalLong field(String name) {
        try {
            for (String line : Files.readAllLines(Path.of("/proc", Long.toString(pid), "status"))) {
                if (line.startsWith(name)) {
                    String kb = line.substring(name.length()).trim().split("\\s+")[0];
                    return OptionalLong.of(Long.parseLong(kb) * 1024);
                }
            }
        } catch (IOException | RuntimeException e) {
            // no such process, or no /proc
        }
        return OptionalLong.empty();
    }
}
