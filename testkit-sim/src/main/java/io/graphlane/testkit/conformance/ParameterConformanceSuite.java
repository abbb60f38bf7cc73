package io.graphlane.testkit.conformance;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import io.graphlane.core.backend.ParameterBackend;
import io.graphlane.core.completion.Completion;
import io.graphlane.core.completion.Outcome;
import io.graphlane.core.param.EncodedLease;
import io.graphlane.core.param.Materialization;
import io.graphlane.core.param.WeightRecipe;
import io.graphlane.core.tensor.DType;
import io.graphlane.core.tensor.TensorSpec;
import io.graphlane.testkit.conformance.ConformanceWork.Gate;
import io.graphlane.testkit.ledger.LedgerLease;
import io.graphlane.testkit.ledger.RetentionLedger;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The laws of {@code CONTRACTS.md} for {@code ParameterBackend}, one named test per law, for any
 * backend. A backend's test extends this class and says how to make a parameter backend (on a device
 * of its own), a loading context, a gate that holds that context, a parameter slot, and how to read a
 * weight's values on the host; nothing else. The suite makes the checkpoint data itself:
 * {@link LedgerLease}s over values it knows, and {@link WeightRecipe}s over them, so every lease's
 * releases land in a {@link RetentionLedger} tied to the realization's exact completion.
 *
 * <p>Events are ordered by gates and completions, never by sleeping; every wait has a deadline, so a
 * broken backend fails a test instead of hanging it. Every gate is opened, every weight handle the
 * suite still holds is closed, and the backend is stopped after each test.
 *
 * @param <X> the backend's loading context (a lane)
 * @param <P> the backend's parameter slot
 * @param <W> the backend's materialized weight
 * @param <M> the backend's in-flight materialization
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
public abstract class ParameterConformanceSuite<X, P, W, M extends Materialization<W>> {

    private final List<Gate<?>> gates = new CopyOnWriteArrayList<>();
    private final Set<W> owned = Collections.newSetFromMap(new IdentityHashMap<>());
    private final List<P> parameters = new ArrayList<>();
    private ParameterBackend<X, P, W, M> backend;
    private RetentionLedger ledger;

    /**
     * A new parameter backend for one test; {@link #stopBackend()} ends it after the test. It runs on a device of its
     * own, or on one device the backend's test opens once for the class when opening it costs much (kernels to compile).
     */
    protected abstract ParameterBackend<X, P, W, M> createBackend();

    /** A new loading context (lane) of the backend made for this test. */
    protected abstract X newContext();

    /**
     * Holds {@code context}: whatever is started on it after this call does not complete before the
     * returned gate is opened (on a CPU a latch the lane's worker waits on; on a GPU a stream wait on a
     * host-written flag). The suite opens every gate after the test.
     */
    protected abstract Gate<?> hold(X context, String name);

    /** The elements of {@code weight} as F32, row-major, read on the host after its materialization finished. */
    protected abstract float[] read(W weight);

    /** The dtype and shape of {@code weight}. */
    protected abstract TensorSpec spec(W weight);

    /** True when the two handles designate the same storage (not equal copies of it). */
    protected abstract boolean sharesStorage(W a, W b);

    /** Closes one weight handle (the storage goes when its last handle is closed). */
    protected abstract void close(W weight);

    /** A new parameter slot named {@code name} that accepts weights of {@code spec} in the backend's layout. */
    protected abstract P parameter(String name, TensorSpec spec);

    /** The weight bound to {@code parameter}, empty while nothing is. */
    protected abstract Optional<W> bound(P parameter);

    /** Releases what {@code parameter} holds (the bound handle), after the test. */
    protected abstract void unbind(P parameter);

    /** Stops the backend made for this test (and its device, unless shared by the class); every weight handle was closed before. */
    protected abstract void stopBackend();

    /** How long the suite waits for work that must end before it calls the backend hung. */
    protected Duration timeout() {
        return Duration.ofSeconds(20);
    }

    @BeforeEach
    final void startBackend() {
        ledger = new RetentionLedger();
        backend = createBackend();
    }

    @AfterEach
    final void stopEverything() {
        gates.forEach(Gate::open);
        try {
            parameters.forEach(this::unbind);
            List<W> left = new ArrayList<>(owned);
            owned.clear();
            left.forEach(this::close);
        } finally {
            stopBackend();
        }
    }

    // ---------------------------------------------------------------- values

    /** F32 checkpoint data is materialized bit for bit: signed zeros, subnormals, extremes and infinities included. */
    @Test
    public void f32ValuesAreMaterializedBitForBit() throws Exception {
        float[] values = {1f, -2.5f, 0f, -0f, Float.MIN_VALUE, -Float.MIN_NORMAL / 3, Float.MAX_VALUE, -Float.MAX_VALUE,
            Float.POSITIVE_INFINITY, Float.NEGATIVE_INFINITY, (float) Math.PI, 1e-30f};
        LedgerLease lease = lease("model.layers.0.w", TensorSpec.of(DType.F32, 3, 4), f32Bytes(values));
        W weight = finish(materialize(lease, newContext()));
        assertEquals(TensorSpec.of(DType.F32, 3, 4), spec(weight));
        float[] found = read(weight);
        assertEquals(values.length, found.length, "elements read back");
        for (int i = 0; i < values.length; i++) {
            assertSameFloat(values[i], found[i], "element " + i);
        }
        assertLedgerClean();
    }

    /** F16 data is widened to F32 exactly, for every one of its 65536 bit patterns. */
    @Test
    public void f16IsWidenedExactlyForEveryBitPattern() throws Exception {
        LedgerLease lease = lease("h", TensorSpec.of(DType.F16, 256, 256), allSixteenBitPatterns());
        W weight = finish(materialize(lease, newContext()));
        assertEquals(TensorSpec.of(DType.F32, 256, 256), spec(weight), "F16 data is widened to F32");
        float[] found = read(weight);
        for (int bits = 0; bits < 65536; bits++) {
            assertSameFloat(halfReference(bits, 5, 10), found[bits], "f16 0x" + Integer.toHexString(bits));
        }
        assertLedgerClean();
    }

    /** BF16 data is widened to F32 exactly, for every one of its 65536 bit patterns. */
    @Test
    public void bf16IsWidenedExactlyForEveryBitPattern() throws Exception {
        LedgerLease lease = lease("bf", TensorSpec.of(DType.BF16, 65536), allSixteenBitPatterns());
        W weight = finish(materialize(lease, newContext()));
        assertEquals(TensorSpec.of(DType.F32, 65536), spec(weight), "BF16 data is widened to F32");
        float[] found = read(weight);
        for (int bits = 0; bits < 65536; bits++) {
            assertSameFloat(halfReference(bits, 8, 7), found[bits], "bf16 0x" + Integer.toHexString(bits));
        }
        assertLedgerClean();
    }

    // ---------------------------------------------------------------- lease lifetime

    /** While its realization is held, a finishing caller waits and the lease stays open; it is released once, after. */
    @Test
    public void leaseIsHeldUntilTheExactCompletionOfItsRealization() throws Exception {
        X context = newContext();
        Gate<?> gate = gate(context, "before-load");
        LedgerLease lease = lease("held", TensorSpec.of(DType.F32, 2), f32Bytes(1f, 2f));
        M m = materialize(lease, context);
        CompletableFuture<W> finished = finishInBackground(m);

        assertFalse(m.completion().isDone(), m.completion().label() + " ended while its context was held");
        assertFalse(finished.isDone(), "finishMaterialization returned before the realization completed");
        assertEquals(0, lease.releaseCount(), "the lease was released while its realization was still held");

        gate.open();
        W weight = own(result(finished, "finishMaterialization of " + m.name()));
        assertTrue(m.completion().isDone());
        assertEquals(List.of(1f, 2f), boxed(read(weight)));
        assertLedgerClean();
    }

    /** Leased bytes that do not fit their spec fail the realization (naming the tensor); the lease is still released once, after it. */
    @Test
    public void badLeaseFailsTheRealizationAndIsReleasedOnceAfterIt() throws Exception {
        X context = newContext();
        Gate<?> gate = gate(context, "before-bad-load");
        LedgerLease lease = lease("model.bad.weight", TensorSpec.of(DType.F32, 3), f32Bytes(1f, 2f));
        M m = materialize(lease, context);
        assertEquals(0, lease.releaseCount(), "materialize released the lease it now owns");
        gate.open();

        Throwable failure = finishFailing(m);
        assertTrue(message(failure).contains("model.bad.weight"), "the failure must name the tensor: " + message(failure));
        assertInstanceOf(Outcome.Failed.class, awaitOutcome(m.completion()), "the realization's completion must fail");
        assertLedgerClean();
    }

    /** A recipe that fails to evaluate fails its realization; every source lease is released exactly once, after it. */
    @Test
    public void failedRecipeReleasesEverySourceOnceAfterItsCompletion() throws Exception {
        X context = newContext();
        Gate<?> gate = gate(context, "before-failing-recipe");
        List<LedgerLease> sources = bf16Rows("q", "k", "v");
        RowConcat recipe = new RowConcat("model.layers.0.qkv", sources, true);
        M m = backend.materializeRecipe(recipe, context);
        tieTo(sources, m);
        sources.forEach(s -> assertEquals(0, s.releaseCount(), "source " + s.name() + " was released before its realization ended"));
        gate.open();

        Throwable failure = finishFailing(m);
        assertTrue(message(failure).contains("model.layers.0.qkv"), "the failure must name the weight: " + message(failure));
        assertLedgerClean();
    }

    /** Finishing a realization again never releases its lease a second time. */
    @Test
    public void finishingTwiceNeverReleasesTwice() throws Exception {
        LedgerLease lease = lease("twice", TensorSpec.of(DType.F32, 2), f32Bytes(3f, 4f));
        M m = materialize(lease, newContext());
        W weight = finish(m);
        try {
            W again = assertTimeoutPreemptively(timeout(), () -> backend.finishMaterialization(m), "a second finish hung");
            if (again != null && again != weight) {
                own(again);
            }
        } catch (RuntimeException refused) {
            // refusing a second finish is allowed; releasing the lease again is not
        }
        assertEquals(1, lease.releaseCount(), "the lease was released again by a second finish");
        assertLedgerClean();
    }

    // ---------------------------------------------------------------- recipes

    /** A recipe over several source leases gives the derived values; each source is held while it runs and released once, after it. */
    @Test
    public void recipeOfSeveralSourcesReleasesEachSourceOnceAfterItsCompletion() throws Exception {
        X context = newContext();
        Gate<?> gate = gate(context, "before-recipe");
        List<LedgerLease> sources = bf16Rows("q", "k", "v");
        RowConcat recipe = new RowConcat("model.layers.0.qkv", sources, false);
        M m = backend.materializeRecipe(recipe, context);
        tieTo(sources, m);
        CompletableFuture<W> finished = finishInBackground(m);
        assertFalse(finished.isDone(), "finishMaterialization returned before the recipe's realization completed");
        sources.forEach(s -> assertEquals(0, s.releaseCount(), "source " + s.name() + " was released while its realization was held"));

        gate.open();
        W weight = own(result(finished, "finishMaterialization of " + recipe.name()));
        assertEquals(TensorSpec.of(DType.F32, 3, 2), spec(weight), "a BF16 recipe result is widened to F32");
        assertEquals(List.of(1f, 2f, 3f, -4f, 0.5f, -0.25f), boxed(read(weight)));
        sources.forEach(s -> assertEquals(1, s.releaseCount(), "releases of source " + s.name()));
        assertLedgerClean();
    }

    // ---------------------------------------------------------------- sharing

    /** A shared handle is the same storage, made with no re-read (the lease is already released), and outlives the first handle. */
    @Test
    public void sharedWeightIsTheSameStorageWithNoReRead() throws Exception {
        LedgerLease lease = lease("shared", TensorSpec.of(DType.F32, 2, 2), f32Bytes(5f, 6f, 7f, 8f));
        W first = finish(materialize(lease, newContext()));
        assertTrue(lease.isReleased());
        int leasesBefore = ledger.entries().size();

        W second = own(backend.shareMaterializedWeight(first));
        assertTrue(sharesStorage(first, second), "shareMaterializedWeight must give a handle on the same storage, not a copy");
        assertEquals(TensorSpec.of(DType.F32, 2, 2), spec(second));
        assertEquals(leasesBefore, ledger.entries().size(), "sharing acquired checkpoint data");
        assertEquals(1, lease.releaseCount());

        disown(first);
        assertEquals(List.of(5f, 6f, 7f, 8f), boxed(read(second)), "a shared handle must stay readable after the first one closed");
        assertLedgerClean();
    }

    // ---------------------------------------------------------------- binding

    /** validateBind refuses a wrong name, shape or dtype naming the tensor, the expected and the found value. */
    @Test
    public void validateBindNamesTheTensorTheExpectedAndTheFound() throws Exception {
        TensorSpec spec = TensorSpec.of(DType.F32, 2, 3);
        W weight = finish(materialize(lease("layer.0.q", spec, f32Bytes(1, 2, 3, 4, 5, 6)), newContext()));

        String wrongName = refusal(slot("layer.0.k", spec), weight);
        assertContainsAll(wrongName, "layer.0.k", "layer.0.q");

        TensorSpec otherShape = TensorSpec.of(DType.F32, 3, 2);
        String wrongShape = refusal(slot("layer.0.q", otherShape), weight);
        assertContainsAll(wrongShape, "layer.0.q", otherShape.shape().toString(), spec.shape().toString());

        String wrongDtype = refusal(slot("layer.0.q", TensorSpec.of(DType.I32, 2, 3)), weight);
        assertContainsAll(wrongDtype, "layer.0.q", DType.I32.toString(), DType.F32.toString());
    }

    /** validateBind has no side effect, refused or not; bind after it passed does not fail and binds that storage. */
    @Test
    public void validateBindHasNoSideEffectAndBindAfterItCannotFail() throws Exception {
        TensorSpec spec = TensorSpec.of(DType.F32, 2, 3);
        W weight = finish(materialize(lease("layer.1.o", spec, f32Bytes(1, 2, 3, 4, 5, 6)), newContext()));
        P wrong = slot("layer.1.o", TensorSpec.of(DType.F32, 6));
        P right = slot("layer.1.o", spec);

        refusal(wrong, weight);
        backend.validateBind(right, weight);
        backend.validateBind(right, weight);
        assertTrue(bound(wrong).isEmpty(), "a refused validateBind bound something");
        assertTrue(bound(right).isEmpty(), "validateBind bound the weight");
        assertEquals(List.of(1f, 2f, 3f, 4f, 5f, 6f), boxed(read(weight)), "validateBind changed the weight");

        W handle = backend.shareMaterializedWeight(weight);
        backend.bind(right, handle);
        W inSlot = bound(right).orElseThrow(() -> new AssertionError("bind after a passed validateBind bound nothing"));
        assertTrue(sharesStorage(inSlot, weight), "the slot holds other storage than the weight it was bound");
        assertTrue(bound(wrong).isEmpty());
    }

    // ---------------------------------------------------------------- helpers for subclasses and tests

    /** The backend under test in the current test. */
    protected final ParameterBackend<X, P, W, M> backend() {
        return backend;
    }

    /** The ledger of the current test's leases. */
    protected final RetentionLedger ledger() {
        return ledger;
    }

    /** Waits (with the suite's deadline) until {@code c} ends and returns its outcome. */
    protected final Outcome awaitOutcome(Completion c) {
        return Deadlines.awaitOutcome(c, timeout());
    }

    private M materialize(LedgerLease lease, X context) {
        M m = backend.materialize(lease, context);
        tieTo(List.of(lease), m);
        return m;
    }

    /** Ties each lease's ledger entry to the realization's completion, so that an early release is a recorded violation. */
    private void tieTo(List<LedgerLease> leases, M m) {
        assertNotNull(m, "the backend returned no materialization");
        leases.forEach(l -> l.entry().heldUntil(m.completion()));
    }

    private W finish(M m) {
        return own(assertTimeoutPreemptively(timeout(), () -> backend.finishMaterialization(m),
                "finishMaterialization of " + m.name() + " did not return within " + timeout()));
    }

    private Throwable finishFailing(M m) {
        Throwable failure = assertThrows(Throwable.class, () -> own(assertTimeoutPreemptively(timeout(),
                () -> backend.finishMaterialization(m), "finishMaterialization of " + m.name() + " did not return within " + timeout())),
                "finishMaterialization of the failed " + m.name() + " must throw the realization's failure");
        if (failure instanceof AssertionError assertion && message(assertion).contains("did not return within")) {
            throw assertion;
        }
        return failure;
    }

    /** Finishes {@code m} on a thread of its own and returns once that thread waits (or has already returned). */
    private CompletableFuture<W> finishInBackground(M m) throws InterruptedException {
        CompletableFuture<W> result = new CompletableFuture<>();
        Thread finisher = new Thread(() -> {
            try {
                result.complete(backend.finishMaterialization(m));
            } catch (Throwable t) {
                result.completeExceptionally(t);
            }
        }, "conformance-finisher-" + m.name());
        finisher.setDaemon(true);
        finisher.start();
        // Wait (with a deadline) until the finisher parks in its wait or returns, so the checks that follow see it waiting.
        long deadline = System.nanoTime() + timeout().toNanos();
        while (!result.isDone() && !isParked(finisher.getState())) {
            if (System.nanoTime() > deadline) {
                fail("finishMaterialization of " + m.name() + " neither waited nor returned within " + timeout());
            }
            Thread.onSpinWait();
        }
        return result;
    }

    private static boolean isParked(Thread.State state) {
        return state == Thread.State.WAITING || state == Thread.State.TIMED_WAITING || state == Thread.State.BLOCKED;
    }

    private W result(CompletableFuture<W> finished, String what) {
        return Deadlines.get(finished, timeout(), what, "it still waited after its context was released");
    }

    private String refusal(P parameter, W weight) {
        RuntimeException refused = assertThrows(RuntimeException.class, () -> backend.validateBind(parameter, weight),
                "validateBind must refuse " + weight + " for " + parameter);
        assertTrue(bound(parameter).isEmpty(), "a refused validateBind bound the weight");
        return message(refused);
    }

    private P slot(String name, TensorSpec spec) {
        P p = parameter(name, spec);
        parameters.add(p);
        return p;
    }

    private Gate<?> gate(X context, String name) {
        Gate<?> g = hold(context, name);
        gates.add(g);
        return g;
    }

    private LedgerLease lease(String name, TensorSpec spec, ByteBuffer bytes) {
        return new LedgerLease(ledger, name, spec, bytes);
    }

    /** Three BF16 sources of one row of two: [1, 2], [3, -4], [0.5, -0.25]. */
    private List<LedgerLease> bf16Rows(String... names) {
        short[][] rows = {{0x3f80, 0x4000}, {0x4040, (short) 0xc080}, {0x3f00, (short) 0xbe80}};
        List<LedgerLease> leases = new ArrayList<>();
        for (int i = 0; i < names.length; i++) {
            ByteBuffer b = ByteBuffer.allocateDirect(4).order(ByteOrder.LITTLE_ENDIAN).putShort(rows[i][0]).putShort(rows[i][1]).flip();
            leases.add(lease(names[i], TensorSpec.of(DType.BF16, 1, 2), b));
        }
        return leases;
    }

    private W own(W weight) {
        assertNotNull(weight, "the backend returned no weight");
        owned.add(weight);
        return weight;
    }

    private void disown(W weight) {
        owned.remove(weight);
        close(weight);
    }

    private void assertLedgerClean() throws InterruptedException {
        assertTrue(ledger.awaitSettled(timeout()), "leases were not released within " + timeout() + ": " + ledger.violations());
        ledger.assertClean();
    }

    private static void assertContainsAll(String message, String... parts) {
        for (String part : parts) {
            assertTrue(message.contains(part), "the error must name '" + part + "': " + message);
        }
    }

    private static String message(Throwable t) {
        StringBuilder all = new StringBuilder();
        Set<Throwable> seen = Collections.newSetFromMap(new IdentityHashMap<>());
        for (Throwable c = t; c != null && seen.add(c); c = c.getCause()) {
            all.append(c.getMessage()).append(" | ");
        }
        return all.toString();
    }

    private static ByteBuffer f32Bytes(float... values) {
        ByteBuffer b = ByteBuffer.allocateDirect(values.length * Float.BYTES).order(ByteOrder.LITTLE_ENDIAN);
        for (float v : values) {
            b.putFloat(v);
        }
        return b.flip();
    }

    private static ByteBuffer allSixteenBitPatterns() {
        ByteBuffer b = ByteBuffer.allocateDirect(2 * 65536).order(ByteOrder.LITTLE_ENDIAN);
        for (int bits = 0; bits < 65536; bits++) {
            b.putShort((short) bits);
        }
        return b.flip();
    }

    /** A 16-bit float by its definition, in double arithmetic: sign, exponent (bias 2^(e-1) - 1), fraction. */
    private static double halfReference(int bits, int exponentBits, int fractionBits) {
        double sign = (bits >>> 15) == 1 ? -1 : 1;
        int exponent = (bits >>> fractionBits) & ((1 << exponentBits) - 1);
        int fraction = bits & ((1 << fractionBits) - 1);
        int bias = (1 << (exponentBits - 1)) - 1;
        if (exponent == (1 << exponentBits) - 1) {
            return fraction == 0 ? sign * Double.POSITIVE_INFINITY : Double.NaN;
        }
        if (exponent == 0) {
            return sign * fraction / (double) (1 << fractionBits) * Math.pow(2, 1 - bias);
        }
        return sign * (1 + fraction / (double) (1 << fractionBits)) * Math.pow(2, exponent - bias);
    }

    private static void assertSameFloat(double expected, float found, String what) {
        if (Double.isNaN(expected)) {
            assertTrue(Float.isNaN(found), what + ": expected NaN, found " + found);
            return;
        }
        assertEquals(Float.floatToRawIntBits((float) expected), Float.floatToRawIntBits(found),
                what + ": expected " + expected + ", found " + found);
    }

    private static List<Float> boxed(float[] values) {
        List<Float> out = new ArrayList<>(values.length);
        for (float v : values) {
            out.add(v);
        }
        return out;
    }

    /**
     * Concatenates BF16 sources of one shape along axis 0; with {@code failing}, evaluating throws as a
     * recipe over a source of an unexpected layout would.
     */
    private record RowConcat(String name, List<LedgerLease> sources, boolean failing) implements WeightRecipe {
        @Override
        public TensorSpec output() {
            long rows = sources.stream().mapToLong(s -> s.spec().shape().dim(0)).sum();
            return TensorSpec.of(DType.BF16, rows, sources.get(0).spec().shape().dim(1));
        }

        @Override
        public List<EncodedLease> acquireSources() {
            return List.copyOf(sources);
        }

        @Override
        public void evaluate(List<EncodedLease> leased, ByteBuffer out) {
            if (failing) {
                throw new IllegalArgumentException("source " + leased.get(1).name() + " of " + name + " has an unexpected layout");
            }
            for (EncodedLease l : leased) {
                out.put(l.bytes());
            }
        }
    }
}
