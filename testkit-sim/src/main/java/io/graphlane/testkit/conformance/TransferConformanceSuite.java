package io.graphlane.testkit.conformance;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import io.graphlane.core.backend.TransferBackend;
import io.graphlane.core.backend.TransferBackend.Transfer;
import io.graphlane.core.completion.Completion;
import io.graphlane.core.completion.Outcome;
import io.graphlane.testkit.conformance.ConformanceWork.Gate;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The laws of {@code CONTRACTS.md} for {@code TransferBackend}, one named test per law, for any
 * backend. A backend's test extends this class and says how to make a transfer backend (on a device of
 * its own), a lane, a gate that holds a lane, a failed producer ordered before a lane's next copy,
 * host buffers from values, how to read both kinds of copy on the host, and whether a copy's storage
 * was freed; nothing else. Residency bookkeeping (generations, budgets, eviction) is a caller's
 * and is not tested here.
 *
 * <p>Events are ordered by gates and completions, never by sleeping; every wait has a deadline, so a
 * broken backend fails a test instead of hanging it. Every gate is opened, every handle the suite
 * still holds is closed, and the backend is stopped after each test.
 *
 * @param <E> the executor (lane) copies run on
 * @param <W> the backend's device weight
 * @param <H> the backend's host buffer
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
public abstract class TransferConformanceSuite<E, W, H> {

    /** Values with signed zeros, a subnormal, extremes and infinities: a copy must keep every bit. */
    private static final float[] VALUES = {1f, -2.5f, 0f, -0f, Float.MIN_VALUE, Float.MAX_VALUE, Float.NEGATIVE_INFINITY, (float) Math.E};

    private final List<Gate<?>> gates = new CopyOnWriteArrayList<>();
    private final Set<H> ownedHosts = Collections.newSetFromMap(new IdentityHashMap<>());
    private final Set<W> ownedDevices = Collections.newSetFromMap(new IdentityHashMap<>());
    private TransferBackend<E, W, H> backend;

    /** A new transfer backend on a device of its own, for one test; {@link #stopBackend()} ends it after the test. */
    protected abstract TransferBackend<E, W, H> createBackend();

    /** A new lane of the backend made for this test. */
    protected abstract E newLane();

    /**
     * Holds {@code lane}: whatever is submitted to it after this call does not complete before the
     * returned gate is opened. The suite opens every gate after the test.
     */
    protected abstract Gate<?> hold(E lane, String name);

    /** Makes the next copy submitted to {@code lane} fail, as work ordered after a failed producer does. */
    protected abstract void failNextCopyOn(E lane);

    /** A new host buffer named {@code name} holding {@code values} as a one-dimensional F32 tensor. */
    protected abstract H host(String name, float[] values);

    /** The values of a host buffer, read after the copy that made it completed. */
    protected abstract float[] read(H host);

    /** The values of a device weight, read on the host after the copy that made it completed. */
    protected abstract float[] readDevice(W weight);

    /** Closes the caller's handle on a host buffer; closing one the backend already closed is harmless. */
    protected abstract void close(H host);

    /** Closes the caller's handle on a device weight; closing one the backend already closed is harmless. */
    protected abstract void closeDevice(W weight);

    /** True once the storage behind {@code host} was freed (not just the caller's handle closed). */
    protected abstract boolean isFreed(H host);

    /** True once the storage behind {@code weight} was freed (not just the caller's handle closed). */
    protected abstract boolean isFreedDevice(W weight);

    /** Stops the backend made for this test (and its device); every handle was closed before. */
    protected abstract void stopBackend();

    /** How long the suite waits for work that must end before it calls the backend hung. */
    protected Duration timeout() {
        return Duration.ofSeconds(20);
    }

    @BeforeEach
    final void startBackend() {
        backend = createBackend();
    }

    @AfterEach
    final void stopEverything() {
        gates.forEach(Gate::open);
        try {
            List<H> hosts = new ArrayList<>(ownedHosts);
            List<W> devices = new ArrayList<>(ownedDevices);
            ownedHosts.clear();
            ownedDevices.clear();
            hosts.forEach(this::close);
            devices.forEach(this::closeDevice);
        } finally {
            stopBackend();
        }
    }

    // ---------------------------------------------------------------- values

    /** Promotion then demotion gives back every bit of the host values, on the device and on the host. */
    @Test
    public void promoteThenDemoteRoundTripsEveryBit() {
        E lane = newLane();
        H source = ownHost(host("round-trip", VALUES));
        Transfer<W> up = backend.promote(lane, source);
        W onDevice = ownDevice(up.destination());
        assertSucceeded(up.completion());
        assertSameFloats(VALUES, readDevice(onDevice), "promoted copy");

        Transfer<H> down = backend.demote(lane, onDevice);
        H back = ownHost(down.destination());
        assertSucceeded(down.completion());
        assertSameFloats(VALUES, read(back), "demoted copy");
        assertSameFloats(VALUES, readDevice(onDevice), "the device copy after its demotion");
    }

    // ---------------------------------------------------------------- exact completion

    /** A promotion completes with its own copy: not before the work ahead of it, and not waiting for work queued after it. */
    @Test
    public void promotionCompletesExactlyWithItsCopy() {
        E lane = newLane();
        H source = ownHost(host("exact-up", VALUES));
        Gate<?> ahead = gate(lane, "ahead-of-promotion");
        Transfer<W> up = backend.promote(lane, source);
        W onDevice = ownDevice(up.destination());
        Gate<?> behind = gate(lane, "behind-promotion");
        assertFalse(up.completion().isDone(), "the promotion completed before the work ahead of it on its lane");

        ahead.open();
        assertSucceeded(up.completion());
        assertSameFloats(VALUES, readDevice(onDevice), "the destination once its promotion completed");
        behind.open();
    }

    /** A demotion completes with its own copy: not before the work ahead of it, and not waiting for work queued after it. */
    @Test
    public void demotionCompletesExactlyWithItsCopy() {
        E lane = newLane();
        W onDevice = promoted(lane, "exact-down");
        Gate<?> ahead = gate(lane, "ahead-of-demotion");
        Transfer<H> down = backend.demote(lane, onDevice);
        H back = ownHost(down.destination());
        Gate<?> behind = gate(lane, "behind-demotion");
        assertFalse(down.completion().isDone(), "the demotion completed before the work ahead of it on its lane");

        ahead.open();
        assertSucceeded(down.completion());
        assertSameFloats(VALUES, read(back), "the destination once its demotion completed");
        behind.open();
    }

    // ---------------------------------------------------------------- retention

    /** A promotion keeps its host source while the copy runs, even if the caller closes its handle at once; then frees it. */
    @Test
    public void promotionRetainsItsSourceUntilItCompletes() {
        E lane = newLane();
        H source = host("retained-source", VALUES);
        Gate<?> gate = gate(lane, "before-promotion");
        Transfer<W> up = backend.promote(lane, source);
        W onDevice = ownDevice(up.destination());
        close(source);
        assertFalse(isFreed(source), "the host source was freed under a promotion that had not completed");

        gate.open();
        assertSucceeded(up.completion());
        assertSameFloats(VALUES, readDevice(onDevice), "a promotion whose caller closed its source");
        awaitFreed(() -> isFreed(source), "the host source of a completed promotion, its caller's handle closed");
    }

    /** A promotion keeps its device destination while the copy runs, even if the caller closes its handle at once; then frees it. */
    @Test
    public void promotionRetainsItsDestinationUntilItCompletes() {
        E lane = newLane();
        H source = ownHost(host("retained-destination", VALUES));
        Gate<?> gate = gate(lane, "before-promotion");
        Transfer<W> up = backend.promote(lane, source);
        W onDevice = up.destination();
        closeDevice(onDevice);
        assertFalse(isFreedDevice(onDevice), "the destination was freed under a promotion that had not completed");

        gate.open();
        assertSucceeded(up.completion());
        awaitFreed(() -> isFreedDevice(onDevice), "the destination of a completed promotion, its caller's handle closed");
    }

    /** A demotion keeps the device copy until the host copy completed, even if the caller closes it at once; then frees it. */
    @Test
    public void demotionKeepsTheDeviceCopyUntilTheHostCopyCompleted() {
        E lane = newLane();
        W onDevice = promoted(lane, "kept-device-copy");
        Gate<?> gate = gate(lane, "before-demotion");
        Transfer<H> down = backend.demote(lane, onDevice);
        H back = ownHost(down.destination());
        disownDevice(onDevice);
        assertFalse(isFreedDevice(onDevice), "the device copy was freed before its host copy completed");

        gate.open();
        assertSucceeded(down.completion());
        assertSameFloats(VALUES, read(back), "a demotion whose caller closed the device copy");
        awaitFreed(() -> isFreedDevice(onDevice), "the device copy once its host copy completed and its caller closed it");
    }

    /** A demotion keeps its host destination while the copy runs, even if the caller closes its handle at once; then frees it. */
    @Test
    public void demotionRetainsItsDestinationUntilItCompletes() {
        E lane = newLane();
        W onDevice = promoted(lane, "retained-host-destination");
        Gate<?> gate = gate(lane, "before-demotion");
        Transfer<H> down = backend.demote(lane, onDevice);
        H back = down.destination();
        close(back);
        assertFalse(isFreed(back), "the host destination was freed under a demotion that had not completed");

        gate.open();
        assertSucceeded(down.completion());
        awaitFreed(() -> isFreed(back), "the host destination of a completed demotion, its caller's handle closed");
        assertSameFloats(VALUES, readDevice(onDevice), "the device copy after its demotion");
    }

    // ---------------------------------------------------------------- failure

    /** A failed demotion keeps the device copy: still there, still readable, with every value. */
    @Test
    public void failedDemotionKeepsTheDeviceCopy() {
        E lane = newLane();
        W onDevice = promoted(lane, "fallback");
        E failing = newLane();
        failNextCopyOn(failing);
        Transfer<H> down = backend.demote(failing, onDevice);
        H back = ownHost(down.destination());
        assertInstanceOf(Outcome.Failed.class, awaitOutcome(down.completion()), "the demotion after a failed producer must fail");

        assertFalse(isFreedDevice(onDevice), "a failed demotion freed the device copy it must fall back to");
        assertSameFloats(VALUES, readDevice(onDevice), "the device copy after its failed demotion");
        assertNotNull(back);
    }

    /** A failed promotion leaves its host source as it was. */
    @Test
    public void failedPromotionKeepsTheHostSource() {
        E failing = newLane();
        H source = ownHost(host("kept-host", VALUES));
        failNextCopyOn(failing);
        Transfer<W> up = backend.promote(failing, source);
        ownDevice(up.destination());
        assertInstanceOf(Outcome.Failed.class, awaitOutcome(up.completion()), "the promotion after a failed producer must fail");

        assertFalse(isFreed(source), "a failed promotion freed its host source");
        assertSameFloats(VALUES, read(source), "the host source after its failed promotion");
    }

    // ---------------------------------------------------------------- helpers for subclasses and tests

    /** The backend under test in the current test. */
    protected final TransferBackend<E, W, H> backend() {
        return backend;
    }

    /** Waits (with the suite's deadline) until {@code c} ends and returns its outcome. */
    protected final Outcome awaitOutcome(Completion c) {
        return Deadlines.awaitOutcome(c, timeout());
    }

    private void assertSucceeded(Completion c) {
        if (awaitOutcome(c) instanceof Outcome.Failed failed) {
            fail(c.label() + " failed: " + failed.cause(), failed.cause());
        }
    }

    /** A device weight holding {@link #VALUES}, its promotion completed. */
    private W promoted(E lane, String name) {
        H source = ownHost(host(name, VALUES));
        Transfer<W> up = backend.promote(lane, source);
        W onDevice = ownDevice(up.destination());
        assertSucceeded(up.completion());
        return onDevice;
    }

    /**
     * Waits (with the deadline) until {@code freed} holds. A backend releases what a copy retained in the
     * copy's completion callbacks, on its own thread, in an order the contract leaves open relative to the
     * test's own callbacks; so the suite waits for the effect rather than for an event.
     */
    private void awaitFreed(BooleanSupplier freed, String what) {
        long deadline = System.nanoTime() + timeout().toNanos();
        while (!freed.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                fail(what + " was never freed within " + timeout() + ": a leak");
            }
            LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(1));
        }
    }

    private Gate<?> gate(E lane, String name) {
        Gate<?> g = hold(lane, name);
        gates.add(g);
        return g;
    }

    private H ownHost(H host) {
        assertNotNull(host, "the backend returned no host buffer");
        ownedHosts.add(host);
        return host;
    }

    private W ownDevice(W weight) {
        assertNotNull(weight, "the backend returned no device weight");
        ownedDevices.add(weight);
        return weight;
    }

    private void disownDevice(W weight) {
        ownedDevices.remove(weight);
        closeDevice(weight);
    }

    private static void assertSameFloats(float[] expected, float[] found, String what) {
        assertEquals(expected.length, found.length, what + ": elements");
        for (int i = 0; i < expected.length; i++) {
            assertEquals(Float.floatToRawIntBits(expected[i]), Float.floatToRawIntBits(found[i]),
                    what + ", element " + i + ": expected " + expected[i] + ", found " + found[i]);
        }
    }
}
