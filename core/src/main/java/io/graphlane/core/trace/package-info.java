/**
 * The execution trace: what lanes did and when.
 *
 * <p>Owns the event model ({@link io.graphlane.core.trace.TraceEvent}), the recorder contract
 * ({@link io.graphlane.core.trace.TraceRecorder}) with a bounded lock-free buffer, and a writer of
 * Chrome trace-event JSON ({@link io.graphlane.core.trace.ChromeTraceWriter}) that opens in Perfetto
 * and {@code chrome://tracing}: one track per lane, flow arrows for cross-lane waits.
 *
 * <p>Guarantees: a disabled recorder ({@link io.graphlane.core.trace.TraceRecorder#DISABLED}) costs one
 * boolean check at each recording site; a buffer never grows past its capacity (later events are
 * counted as dropped, never blocking the recording thread). Refuses: sampling, aggregation and any
 * I/O on the recording path; timestamps are {@link java.lang.System#nanoTime()} values of one JVM.
 */
package io.graphlane.core.trace;
