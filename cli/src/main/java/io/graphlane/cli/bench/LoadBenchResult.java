package io.graphlane.cli.bench;

import java.util.Locale;

/**
 * The figures of one {@code graphlane bench load} run.
 *
 * @param bytes             checkpoint bytes loaded (the sum of every tensor's bytes)
 * @param seconds           wall time of the load through the materialization supervisor: leases, materializations, binds
 * @param rawReadSeconds    wall time of the best plain sequential read of the same files, warm page cache
 * @param heapGrowthBytes   heap in use after the load (weights still bound) minus before, both after a GC
 * @param leasesOpenAfter   checkpoint leases still open once the weights were bound and then closed
 * @param zeroCopyTensors   tensors whose weight is the mapped bytes used in place
 * @param tensors           tensors loaded
 */
public record LoadBenchResult(long bytes, double seconds, double rawReadSeconds, long heapGrowthBytes,
                              int leasesOpenAfter, int zeroCopyTensors, int tensors) {

    /** Load throughput in GB/s (10^9 bytes). */
    public double gbPerSecond() {
        return bytes / seconds / 1e9;
    }

    /** Raw sequential read throughput in GB/s (10^9 bytes). */
    public double rawReadGbPerSecond() {
        return bytes / rawReadSeconds / 1e9;
    }

    /** Load throughput over raw read throughput: at least 0.9 is the target. */
    public double ratio() {
        return gbPerSecond() / rawReadGbPerSecond();
    }

    /** Heap growth in MB (2^20 bytes). */
    public double heapGrowthMb() {
        return heapGrowthBytes / (1024.0 * 1024.0);
    }

    /** The one-object JSON form the issue specifies. */
    public String toJson() {
        return String.format(Locale.ROOT,
                "{\"bytes\":%d,\"seconds\":%.6f,\"gb_per_s\":%.3f,\"raw_read_gb_per_s\":%.3f,\"ratio\":%.3f,"
                        + "\"heap_growth_mb\":%.1f,\"leases_open_after\":%d}",
                bytes, seconds, gbPerSecond(), rawReadGbPerSecond(), ratio(), heapGrowthMb(), leasesOpenAfter);
    }

    /** A few human-readable lines. */
    public String toText() {
        return String.format(Locale.ROOT,
                "loaded %d tensors, %d bytes in %.3f s: %.3f GB/s (%d used in place)%n"
                        + "raw sequential read of the same files (warm page cache): %.3f GB/s%n"
                        + "ratio %.3f (target >= 0.9), heap growth %.1f MB (target <= 64), leases open after: %d",
                tensors, bytes, seconds, gbPerSecond(), zeroCopyTensors, rawReadGbPerSecond(), ratio(), heapGrowthMb(),
                leasesOpenAfter);
    }
}
