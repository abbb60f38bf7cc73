package io.graphlane.backend.gpu;

import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import jcuda.driver.CUdeviceptr;
import jcuda.driver.CUresult;
import jcuda.driver.CUstream;

/**
 * A device whose events are reached when the test says so, for the host-side logic of the GPU
 * backend (ordering, poisoning, retention, shutdown, memory) on a machine without CUDA. Every
 * stream operation is appended to {@link #log} so tests can check what would have been enqueued:
 * {@code <stream> record|wait <event>}, {@code <stream> alloc|free buf<n>} for stream-ordered memory,
 * {@code device alloc|free buf<n>} for memory allocated or freed on no stream of the backend.
 * Freeing a pointer twice, or one it never handed out, is counted in {@link #badFrees}.
 */
final class ScriptedDevice implements DeviceRuntime {
    private static final AtomicInteger ORDINALS = new AtomicInteger(1000);

    final List<String> log = new CopyOnWriteArrayList<>();
    final List<Event> events = new CopyOnWriteArrayList<>();
    final AtomicInteger destroyedStreams = new AtomicInteger();
    final AtomicInteger destroyedEvents = new AtomicInteger();
    final AtomicInteger badFrees = new AtomicInteger();
    volatile boolean closed;
    private final int ordinal = ORDINALS.getAndIncrement();
    private final String name;
    private final boolean memoryPools;
    /** Every pointer handed out, with its name and whether it is still allocated. */
    private final Map<CUdeviceptr, Allocation> allocations = new IdentityHashMap<>();

    ScriptedDevice(String name) {
        this(name, true);
    }

    /** A device with memory pools (stream-ordered allocation) or without them. */
    ScriptedDevice(String name, boolean memoryPools) {
        this.name = name;
        this.memoryPools = memoryPools;
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
    public boolean streamOrderedMemory() {
        return memoryPools;
    }

    @Override
    public CUdeviceptr allocate(long bytes) {
        if (memoryPools) {
            throw new IllegalStateException("cuMemAlloc on a device with memory pools: allocations must be stream-ordered");
        }
        return newAllocation("device");
    }

    @Override
    public void free(CUdeviceptr pointer) {
        release(pointer, "device");
    }

    @Override
    public void close() {
        closed = true;
    }

    /** The most recently recorded event. */
    Event lastEvent() {
        return events.get(events.size() - 1);
    }

    /** The name ({@code buf<n>}) the log uses for {@code pointer}. */
    String nameOf(CUdeviceptr pointer) {
        synchronized (allocations) {
            Allocation a = allocations.get(pointer);
            return a == null ? "unknown pointer" : a.name;
        }
    }

    /** The log lines that mention {@code what}, in order. */
    List<String> linesAbout(String what) {
        return log.stream().filter(l -> l.endsWith(" " + what)).toList();
    }

    private CUdeviceptr newAllocation(String where) {
        CUdeviceptr p = new CUdeviceptr();
        String id;
        synchronized (allocations) {
            id = "buf" + allocations.size();
            allocations.put(p, new Allocation(id));
        }
        log.add(where + " alloc " + id);
        return p;
    }

    private void release(CUdeviceptr pointer, String where) {
        synchronized (allocations) {
            Allocation a = allocations.get(pointer);
            if (closed) {
                badFrees.incrementAndGet();
                log.add(where + " BAD FREE after the device was released");
                return;
            }
            if (a == null || a.freed) {
                badFrees.incrementAndGet();
                log.add(where + " BAD FREE " + (a == null ? "of an unknown pointer" : "twice of " + a.name));
                return;
            }
            a.freed = true;
            log.add(where + " free " + a.name);
        }
    }

    private static final class Allocation {
        final String name;
        boolean freed;

        Allocation(String name) {
            this.name = name;
        }
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
        private volatile boolean destroyed;

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
        public CUdeviceptr allocate(long bytes) {
            if (!memoryPools) {
                throw new IllegalStateException("cuMemAllocAsync on a device without memory pools");
            }
            return newAllocation(name);
        }

        @Override
        public void free(CUdeviceptr pointer) {
            if (!memoryPools) {
                throw new IllegalStateException("cuMemFreeAsync on a device without memory pools");
            }
            if (destroyed) {
                badFrees.incrementAndGet();
                log.add(name + " BAD FREE on a destroyed stream");
                return;
            }
            release(pointer, name);
        }

        @Override
        public CUstream cuStream() {
            throw new UnsupportedOperationException("a scripted stream has no CUDA stream");
        }

        @Override
        public void destroy() {
            destroyed = true;
            destroyedStreams.incrementAndGet();
            log.add(name + " destroyed");
        }
    }
}
