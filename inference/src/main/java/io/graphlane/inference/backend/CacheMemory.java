package io.graphlane.inference.backend;

import org.bytedeco.javacpp.Pointer;

/**
 * How much memory the KV caches may take, and the default KV-cache budget derived from it. On the CPU the caches are
 * native tensors allocated through JavaCPP, which refuses an allocation (an {@link OutOfMemoryError}) past either of
 * its limits: {@code org.bytedeco.javacpp.maxBytes} over what it has allocated (by default the JVM's maximum heap,
 * {@code -Xmx}) and {@code org.bytedeco.javacpp.maxPhysicalBytes} over the process's resident memory (by default a
 * multiple of it); a limit set to 0 is off. The memory the operating system reports available bounds both.
 */
public final class CacheMemory {
    /** The share of the free memory the default budget takes, leaving the rest to activations, logits and the heap. */
    public static final double DEFAULT_SHARE = 0.5;

    private CacheMemory() {
    }

    /**
     * The bytes native allocations may still take on this host now: the least of JavaCPP's room under
     * {@code maxBytes} and under {@code maxPhysicalBytes} (each where set) and of the memory the operating system
     * reports available (where it reports any).
     */
    public static long hostFree() {
        long free = Long.MAX_VALUE;
        if (Pointer.maxBytes() > 0) {
            free = Math.min(free, Pointer.maxBytes() - Pointer.totalBytes());
        }
        if (Pointer.maxPhysicalBytes() > 0) {
            free = Math.min(free, Pointer.maxPhysicalBytes() - Pointer.physicalBytes());
        }
        long available = Pointer.availablePhysicalBytes();
        if (available > 0) {
            free = Math.min(free, available);
        }
        return Math.max(0, free);
    }

    /** The default KV-cache budget over {@code freeBytes} of free memory: {@link #DEFAULT_SHARE} of it, at least one byte. */
    public static long defaultBudget(long freeBytes) {
        return budget(freeBytes, DEFAULT_SHARE);
    }

    /**
     * The KV-cache budget that takes {@code share} of {@code freeBytes} of free memory, at least one byte: what
     * {@code --kv-memory-fraction} asks for (as vLLM's {@code gpu-memory-utilization} bounds its cache, but as a share of
     * what is free once the weights are loaded, not of the whole device).
     *
     * @throws io.graphlane.core.GraphlaneException naming the option when {@code share} is not in (0, 1]
     */
    public static long budget(long freeBytes, double share) {
        requireShare(share);
        return Math.max(1, (long) (Math.max(0, freeBytes) * share));
    }

    /**
     * Refuses a share of free memory outside (0, 1].
     *
     * @throws io.graphlane.core.GraphlaneException naming {@code --kv-memory-fraction}, the range and the value
     */
    public static void requireShare(double share) {
        if (!(share > 0 && share <= 1)) {
            throw new io.graphlane.core.GraphlaneException("--kv-memory-fraction must be in (0, 1], got " + share);
        }
    }

    /** {@code bytes} in the unit that reads best: {@code 512.0 MiB}, {@code 3.2 GiB}. */
    public static String format(long bytes) {
        if (bytes >= 1L << 30) {
            return String.format(java.util.Locale.ROOT, "%.1f GiB", bytes / (double) (1L << 30));
        }
        if (bytes >= 1L << 20) {
            return String.format(java.util.Locale.ROOT, "%.1f MiB", bytes / (double) (1L << 20));
        }
        if (bytes >= 1L << 10) {
            return String.format(java.util.Locale.ROOT, "%.1f KiB", bytes / (double) (1L << 10));
        }
        return bytes + " bytes";
    }
}
