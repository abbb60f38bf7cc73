package io.graphlane.backend.cpu;

/** One item of work for a CPU lane: runs on the lane's worker thread; a thrown exception fails its submission. */
@FunctionalInterface
public interface CpuWork {
    void run() throws Exception;

    /** Work that does nothing. */
    CpuWork NOOP = () -> { };
}
