package io.graphlane.backend.gpu;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import jcuda.driver.CUresult;
import jcuda.driver.CUstream;

/**
 * A device whose events are reached when the test says so, for the host-side logic of the GPU
 * backend (ordering, poisoning, retention, shutdown) on a machine without CUDA. Every stream
 * operation is appended to {@link #log} so tests can check what would have been enqueued.
 */
final class ScriptedDevice implements DeviceRuntime {
    private static final AtomicInteger ORDINALS = new AtomicInteger(1000);

    final List<String> log = new CopyOnWriteArrayList<>();
    final List<Event> events = new CopyOnWriteArrayList<>();
    final AtomicInteger destroyedStreams = new AtomicInteger();
    final AtomicInteger destroyedEvents = new AtomicInteger();
    volatile boolean closed;
    private final int ordinal = ORDINALS.getAndIncrement();
    private final String name;

    ScriptedDevice(String name) {
        this.name = name;
    }

    /** A backend over this device with a short poller park. */
    GpuBackend backend() {
        return new GpuBackend(this, GpuOptions.DEFAULTS.withDevice(0));
    }

    @Override
    public String name() {
        return name;
    }

    @Override
    public int ordinal() {
        return ordinal;
    }

    @Override
    public void makeCurrent() {
    }

    @Override
    public StreamHandle createStream(String streamName) {
        return new Stream(streamName);
    }

    @Override
    public void close() {
        closed = true;
    }

    /** The most recently recorded event. */
    Event lastEvent() {
        return events.get(events.size() - 1);
    }

    /** An event the test reaches, or fails with a CUDA error code. */
    final class Event implements EventHandle {
        final String id;
        private volatile int state = CUresult.CUDA_ERROR_NOT_READY;
        volatile boolean destroyed;

        Event(String id) {
            this.id = id;
        }

        void reach() {
            state = CUresult.CUDA_SUCCESS;
        }

        void fail(int code) {
            state = code;
        }

        @Override
        public int query() {
            return state;
        }

        @Override
        public void destroy() {
            if (destroyed) {
                throw new IllegalStateException("event " + id + " destroyed twice");
            }
            destroyed = true;
            destroyedEvents.incrementAndGet();
        }

        @Override
        public String toString() {
            return id;
        }
    }

    private final class Stream implements StreamHandle {
        private final String name;
        private int recorded;

        Stream(String name) {
            this.name = name;
        }

        @Override
        public void waitFor(EventHandle event) {
            log.add(name + " wait " + event);
        }

        @Override
        public EventHandle record() {
            Event e = new Event(name + "@" + recorded++);
            events.add(e);
            log.add(name + " record " + e);
            return e;
        }

        @Override
        public CUstream cuStream() {
            throw new UnsupportedOperationException("a scripted stream has no CUDA stream");
        }

        @Override
        public void destroy() {
            destroyedStreams.incrementAndGet();
            log.add(name + " destroyed");
        }
    }
}
