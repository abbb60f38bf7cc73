package io.graphlane.backend.gpu;

import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import jcuda.driver.CUresult;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The one thread per device that turns recorded CUDA events into completed completions (never
 * a thread per completion). It queries every pending event in turn, settles those that are
 * reached, runs their callbacks, and backs off from spinning to short parks while work runs and
 * to a blocking wait when nothing is pending.
 */
final class EventPoller {
    private static final Logger LOG = LoggerFactory.getLogger(EventPoller.class);
    private static final int SPINS_BEFORE_PARKING = 64;
    /** The longest park between sweeps while long work runs: bounds both latency and the poller's CPU use. */
    private static final long MAX_PARK_NANOS = 1_000_000;

    private final DeviceRuntime runtime;
    private final long parkNanos;
    private final LinkedBlockingQueue<GpuCompletion> incoming = new LinkedBlockingQueue<>();
    private final List<GpuCompletion> pending = new ArrayList<>();
    private final Thread thread;
    private volatile boolean stopping;
    private volatile Runnable onStopped = () -> { };

    EventPoller(DeviceRuntime runtime, long parkNanos) {
        this.runtime = runtime;
        this.parkNanos = parkNanos;
        this.thread = new Thread(this::run, "graphlane-" + runtime.name() + "-poller");
        this.thread.setDaemon(true);
    }

    void start() {
        thread.start();
    }

    /** Watches {@code completion}'s event until it is reached. */
    void watch(GpuCompletion completion) {
        incoming.add(completion);
        LockSupport.unpark(thread);
    }

    /** Lets every watched event settle, then runs {@code then} on the poller thread and ends it. */
    void stopWhenIdle(Runnable then) {
        onStopped = then;
        stopping = true;
        LockSupport.unpark(thread);
    }

    /** The poller thread, for tests that check where callbacks run. */
    Thread thread() {
        return thread;
    }

    private void run() {
        try {
            runtime.makeCurrent();
            int idleSweeps = 0;
            long park = parkNanos;
            while (true) {
                incoming.drainTo(pending);
                if (pending.isEmpty()) {
                    if (stopping && incoming.isEmpty()) {
                        break;
                    }
                    GpuCompletion next = incoming.poll(10, TimeUnit.MILLISECONDS);
                    if (next != null) {
                        pending.add(next);
                    }
                    continue;
                }
                if (sweep()) {
                    idleSweeps = 0;
                    park = parkNanos;
                } else if (++idleSweeps < SPINS_BEFORE_PARKING) {
                    Thread.onSpinWait();
                } else {
                    LockSupport.parkNanos(park);
                    park = Math.min(MAX_PARK_NANOS, park * 2);
                }
            }
        } catch (InterruptedException e) {
            LOG.warn("poller of {} was interrupted with {} events pending; their completions stay unproven and what they retain is leaked",
                    runtime.name(), pending.size());
            Thread.currentThread().interrupt();
        } catch (RuntimeException | Error e) {
            LOG.error("poller of {} died with {} events pending; their completions stay unproven and what they retain is leaked",
                    runtime.name(), pending.size(), e);
        } finally {
            try {
                onStopped.run();
            } catch (RuntimeException e) {
                LOG.warn("releasing {} after its poller stopped failed", runtime.name(), e);
            }
        }
    }

    /** Queries every pending event once; true if at least one completion was settled. */
    private boolean sweep() {
        boolean progress = false;
        boolean again = true;
        while (again) {
            again = false;
            for (Iterator<GpuCompletion> it = pending.iterator(); it.hasNext(); ) {
                GpuCompletion c = it.next();
                int result = c.event().query();
                if (result == CUresult.CUDA_ERROR_NOT_READY) {
                    continue;
                }
                if (c.settle(result)) {
                    it.remove();
                    c.destroyEvent();
                    progress = true;
                    again = true;
                }
            }
        }
        return progress;
    }
}
