package io.graphlane.backend.cpu.param;

import io.graphlane.backend.cpu.CpuBackend;
import io.graphlane.backend.cpu.CpuCompletion;
import io.graphlane.backend.cpu.CpuExecutor;
import io.graphlane.core.backend.ParameterBackend;
import io.graphlane.core.completion.Outcome;
import io.graphlane.core.param.EncodedLease;
import io.graphlane.core.param.WeightRecipe;
import io.graphlane.core.tensor.DType;
import io.graphlane.core.tensor.TensorSpec;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicReference;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The CPU parameter backend. Each materialization is one submission on the loading lane (a
 * {@link CpuExecutor} of the same {@link CpuBackend}), so its exact completion is a
 * {@link CpuCompletion}:
 * <ul>
 *   <li>F32 data that is direct (memory-mapped) and 4-byte aligned is used in place: the weight's
 *       {@link CpuStorage} holds a view of the mapped bytes, which keeps the mapping alive after the
 *       lease is released (see {@link CpuStorage});</li>
 *   <li>F16 and BF16 data is widened exactly into a new off-heap F32 buffer, unless the backend keeps
 *       16-bit weights ({@link #keepingHalfPrecision}): then it is used in place like F32 (copied when
 *       not direct or not 2-byte aligned), and a recipe that yields F16/BF16 stays 16-bit too;</li>
 *   <li>unaligned or heap F32 data, and every other dtype that is not direct, is copied into a new
 *       aligned off-heap buffer; other direct dtypes are used in place with their own dtype;</li>
 *   <li>a recipe is evaluated into a new off-heap buffer (and widened to F32 if it yields F16/BF16).</li>
 * </ul>
 * Bad data (a leased byte count that does not match its spec) fails the materialization's
 * completion, never the caller of {@code materialize}. If {@code materialize} itself throws (the
 * loading lane is closed), the lease was not taken and stays the caller's.
 */
public final class CpuParameterBackend implements ParameterBackend<CpuExecutor, CpuParameter, CpuWeight, CpuMaterialization> {
    private static final Logger LOG = LoggerFactory.getLogger(CpuParameterBackend.class);

    private final CpuBackend device;
    private final boolean keepHalfPrecision;

    /** A parameter backend that realizes weights on loading lanes of {@code device}, widening F16/BF16 to F32. */
    public CpuParameterBackend(CpuBackend device) {
        this(device, false);
    }

    private CpuParameterBackend(CpuBackend device, boolean keepHalfPrecision) {
        this.device = Objects.requireNonNull(device, "device");
        this.keepHalfPrecision = keepHalfPrecision;
    }

    /**
     * A parameter backend that keeps F16/BF16 weights 16-bit (the checkpoint's bytes used in place where
     * aligned); a weight wanted in F32 is then derived with a cast recipe.
     */
    public static CpuParameterBackend keepingHalfPrecision(CpuBackend device) {
        return new CpuParameterBackend(device, true);
    }

    /** The dtype a tensor of {@code encoded} dtype has once materialized: 16-bit floats widen to F32, the rest stay. */
    public static DType materializedDType(DType encoded) {
        return encoded == DType.F16 || encoded == DType.BF16 ? DType.F32 : encoded;
    }

    private DType realizedDType(DType encoded) {
        return keepHalfPrecision ? encoded : materializedDType(encoded);
    }

    @Override
    public CpuMaterialization materialize(EncodedLease lease, CpuExecutor loadingLane) {
        Objects.requireNonNull(lease, "lease");
        Objects.requireNonNull(loadingLane, "loadingLane");
        String name = lease.name();
        TensorSpec encoded = lease.spec();
        AtomicReference<CpuWeight> result = new AtomicReference<>();
        CpuCompletion completion = device.submit(loadingLane, () -> result.set(realize(name, encoded, lease.bytes(), realizedDType(encoded.dtype()))));
        return new CpuMaterialization(name, completion, List.of(lease), result);
    }

    @Override
    public CpuMaterialization materializeRecipe(WeightRecipe recipe, CpuExecutor loadingLane) {
        Objects.requireNonNull(recipe, "recipe");
        Objects.requireNonNull(loadingLane, "loadingLane");
        String name = recipe.name();
        TensorSpec output = recipe.output();
        List<EncodedLease> sources = recipe.acquireSources();
        AtomicReference<CpuWeight> result = new AtomicReference<>();
        CpuCompletion completion;
        try {
            completion = device.submit(loadingLane, () -> result.set(evaluate(recipe, name, output, sources, keepHalfPrecision)));
        } catch (RuntimeException e) {
            releaseAll(name, sources, e);
            throw e;
        }
        return new CpuMaterialization(name, completion, sources, result);
    }

    /**
     * Waits for the realization's exact completion, then releases its source leases exactly once
     * (also on failure), and returns the weight.
     *
     * @throws MaterializationException naming the weight if the realization or a lease release failed
     * @throws IllegalStateException naming the weight if it was already finished
     */
    @Override
    public CpuWeight finishMaterialization(CpuMaterialization m) throws InterruptedException {
        Objects.requireNonNull(m, "materialization");
        Outcome outcome = m.completion().await();
        if (!m.markFinished()) {
            throw new IllegalStateException("materialization of " + m.name() + " was already finished; its leases were released then");
        }
        MaterializationException releaseFailure = releaseAll(m.name(), m.leases(), null);
        CpuWeight weight = m.takeResult();
        if (outcome instanceof Outcome.Failed failed) {
            if (weight != null) {
                weight.close();
            }
            MaterializationException error = failed.cause() instanceof MaterializationException known
                    ? known
                    : new MaterializationException("materializing " + m.name() + " failed: " + failed.cause().getMessage(), failed.cause());
            if (releaseFailure != null) {
                error.addSuppressed(releaseFailure);
            }
            throw error;
        }
        if (releaseFailure != null) {
            weight.close();
            throw releaseFailure;
        }
        return weight;
    }

    @Override
    public CpuWeight shareMaterializedWeight(CpuWeight weight) {
        return weight.share();
    }

    /**
     * Checks that {@code weight} is open and matches the parameter's name, dtype, shape and layout.
     *
     * @throws ParameterBindException naming the parameter and every field that differs, expected and found
     */
    @Override
    public void validateBind(CpuParameter parameter, CpuWeight weight) {
        Objects.requireNonNull(parameter, "parameter");
        Objects.requireNonNull(weight, "weight");
        List<String> problems = new ArrayList<>(4);
        if (weight.isClosed()) {
            problems.add("the weight handle was already closed");
        }
        if (!parameter.name().equals(weight.name())) {
            problems.add("name: expected " + parameter.name() + ", found " + weight.name());
        }
        if (parameter.spec().dtype() != weight.spec().dtype()) {
            problems.add("dtype: expected " + parameter.spec().dtype() + ", found " + weight.spec().dtype());
        }
        if (!parameter.spec().shape().equals(weight.spec().shape())) {
            problems.add("shape: expected " + parameter.spec().shape() + ", found " + weight.spec().shape());
        }
        if (parameter.layout() != weight.layout()) {
            problems.add("layout: expected " + parameter.layout() + ", found " + weight.layout());
        }
        if (!problems.isEmpty()) {
            throw new ParameterBindException("cannot bind weight " + weight.name() + " to parameter " + parameter.name()
                    + ": " + String.join("; ", problems));
        }
    }

    /** Binds {@code weight} (the slot takes the handle); cannot fail after {@link #validateBind} passed. */
    @Override
    public void bind(CpuParameter parameter, CpuWeight weight) {
        parameter.bind(weight);
    }

    @Override
    public void unbind(CpuParameter parameter, CpuWeight weight) {
        parameter.unbind(weight);
    }

    private static CpuWeight realize(String name, TensorSpec encoded, ByteBuffer leased, DType realized) {
        ByteBuffer src = leased.duplicate().order(ByteOrder.LITTLE_ENDIAN);
        long expected = encoded.byteSize();
        if (src.remaining() != expected) {
            throw new MaterializationException("tensor " + name + ": the lease holds " + src.remaining()
                    + " bytes, its spec " + encoded + " needs " + expected);
        }
        DType dtype = encoded.dtype();
        TensorSpec out = new TensorSpec(realized, encoded.shape());
        if (realized != dtype) { // F16/BF16 widened to F32
            CpuStorage storage = CpuStorage.allocate(name, out.byteSize());
            if (dtype == DType.BF16) {
                HalfFloats.bf16ToF32(src, storage.buffer());
            } else {
                HalfFloats.f16ToF32(src, storage.buffer());
            }
            return new CpuWeight(name, out, storage);
        }
        if (src.isDirect() && src.alignmentOffset(src.position(), dtype.byteSize()) == 0) {
            return new CpuWeight(name, out, CpuStorage.mappedView(name, src.slice()));
        }
        CpuStorage storage = CpuStorage.allocate(name, out.byteSize());
        storage.buffer().put(src);
        return new CpuWeight(name, out, storage);
    }

    private static CpuWeight evaluate(WeightRecipe recipe, String name, TensorSpec output, List<EncodedLease> sources,
                                      boolean keepHalfPrecision) {
        CpuStorage evaluated = CpuStorage.allocate(name, output.byteSize());
        recipe.evaluate(sources, evaluated.buffer());
        if (keepHalfPrecision || output.dtype() != DType.F16 && output.dtype() != DType.BF16) {
            return new CpuWeight(name, output, evaluated);
        }
        TensorSpec widened = new TensorSpec(DType.F32, output.shape());
        CpuStorage storage = CpuStorage.allocate(name, widened.byteSize());
        if (output.dtype() == DType.BF16) {
            HalfFloats.bf16ToF32(evaluated.buffer(), storage.buffer());
        } else {
            HalfFloats.f16ToF32(evaluated.buffer(), storage.buffer());
        }
        evaluated.release();
        return new CpuWeight(name, widened, storage);
    }

    private static MaterializationException releaseAll(String name, List<EncodedLease> leases, Throwable primary) {
        MaterializationException failure = null;
        for (EncodedLease lease : leases) {
            try {
                lease.release();
            } catch (RuntimeException e) {
                LOG.error("releasing lease {} of weight {} failed", lease.name(), name, e);
                if (failure == null) {
                    failure = new MaterializationException("releasing lease " + lease.name() + " of weight " + name
                            + " failed: " + e.getMessage(), e);
                } else {
                    failure.addSuppressed(e);
                }
            }
        }
        if (failure != null && primary != null) {
            primary.addSuppressed(failure);
        }
        return failure;
    }
}
