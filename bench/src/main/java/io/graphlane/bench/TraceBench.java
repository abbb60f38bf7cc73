package io.graphlane.bench;

import io.graphlane.core.trace.TraceBuffer;
import io.graphlane.core.trace.TraceEvent;
import io.graphlane.core.trace.TraceRecorder;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.Warmup;

/** What one trace recording site costs on the lane's hot path: disabled (one check) and enabled (a buffer slot). */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(1)
public class TraceBench {
    private TraceRecorder disabled;
    private TraceBuffer enabled;
    private long n;

    /** A fresh buffer for each iteration, large enough never to drop within one. */
    @Setup(Level.Iteration)
    public void setUp() {
        disabled = TraceRecorder.DISABLED;
        enabled = new TraceBuffer(1 << 24);
    }

    /** A recording site with tracing off, as the lane actor writes it. */
    @Benchmark
    public boolean recordSiteDisabled() {
        if (disabled.enabled()) {
            disabled.record(TraceEvent.instant(TraceEvent.Kind.SUBMIT, "lane", "lane#" + n, n++));
            return true;
        }
        return false;
    }

    /** A recording site with tracing on: builds the event and claims a slot. */
    @Benchmark
    public boolean recordSiteEnabled() {
        if (enabled.enabled()) {
            enabled.record(TraceEvent.instant(TraceEvent.Kind.SUBMIT, "lane", "lane#" + n, n++));
            return true;
        }
        return false;
    }
}
