package io.graphlane.backend.gpu.param;

import io.graphlane.backend.gpu.DeviceBuffer;
import io.graphlane.backend.gpu.GpuBackend;
import io.graphlane.backend.gpu.GpuCompletion;
import io.graphlane.backend.gpu.GpuStream;
import io.graphlane.backend.gpu.PinnedBuffer;
import io.graphlane.backend.gpu.nn.GpuKernels;
import io.graphlane.backend.gpu.nn.KernelSources;
import io.graphlane.backend.gpu.nn.LaunchGeometry;
import io.graphlane.core.GraphlaneException;
import io.graphlane.core.backend.ParameterBackend;
import io.graphlane.core.completion.CompletionFailedException;
import io.graphlane.core.completion.Outcome;
import io.graphlane.core.completion.SettableCompletion;
import io.graphlane.core.param.EncodedLease;
import io.graphlane.core.param.WeightRecipe;
import io.graphlane.core.tensor.DType;
import io.graphlane.core.tensor.TensorSpec;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import jcuda.Pointer;
import jcuda.driver.CUdeviceptr;
import jcuda.driver.CUresult;
import jcuda.driver.JCudaDriver;

/**
 * Uploads checkpoint weights to one GPU. Encoded bytes (usually a memory-mapped view) are copied
 * chunk by chunk into pinned staging buffers that take turns ({@link StagingPlan}), each chunk
 * copied asynchronously on the loading lane and, for F16/BF16, either held as stored (a backend made
 * with {@link #holdingSixteenBit}) or widened to F32 on the device.
 * The host side of the pipeline runs on one staging thread per backend, never on the caller.
 * Source leases are released by {@link #finishMaterialization} after the upload's exact completion.
 * Bad data (a leased byte count that does not match its spec, a lease that cannot be read) fails the
 * materialization's completion before anything is copied, never the caller of {@code materialize}.
 */
public final class GpuParameterBackend implements ParameterBackend<GpuStream, GpuParameter, GpuWeight, GpuMaterialization>,
        AutoCloseable {
    private final GpuBackend device;
    private final GpuKernels kernels;
    private final ExecutorService staging;
    private final boolean widen;

    /** A backend that widens F16/BF16 weights to F32 on the device. */
    public GpuParameterBackend(GpuBackend device, GpuKernels kernels) {
        this(device, kernels, true);
    }

    /** A backend that keeps F16/BF16 weights in their own 16 bits on the device (half the memory and bytes read). */
    public static GpuParameterBackend holdingSixteenBit(GpuBackend device, GpuKernels kernels) {
        return new GpuParameterBackend(device, kernels, false);
    }

    private GpuParameterBackend(GpuBackend device, GpuKernels kernels, boolean widen) {
        this.device = Objects.requireNonNull(device, "device");
        this.kernels = Objects.requireNonNull(kernels, "kernels");
        this.widen = widen;
        this.staging = Executors.newSingleThreadExecutor(r -> {
            Thread t = new Thread(r, "graphlane-" + device.deviceName() + "-staging");
            t.setDaemon(true);
            return t;
        });
    }

    /** The dtype a checkpoint dtype becomes on the device where 16-bit weights are widened: F16 and BF16 to F32, the rest stay. */
    public static DType deviceDType(DType encoded) {
        return encoded == DType.F16 || encoded == DType.BF16 ? DType.F32 : encoded;
    }

    /** The dtype a checkpoint dtype becomes on this backend's device: {@link #deviceDType} where it widens, else itself. */
    public DType onDevice(DType encoded) {
        return widen ? deviceDType(encoded) : encoded;
    }

    /** True if F16/BF16 weights stay 16-bit on the device, false if they are widened to F32. */
    public boolean holdsSixteenBit() {
        return !widen;
    }

    @Override
    public GpuMaterialization materialize(EncodedLease lease, GpuStream loadingLane) {
        Objects.requireNonNull(lease, "lease");
        TensorSpec encoded = lease.spec();
        GpuMaterialization m = start(lease.name(), List.of(lease), encoded, loadingLane);
        staging.execute(() -> {
            ByteBuffer bytes;
            try {
                bytes = lease.bytes();
                if (bytes.remaining() != encoded.byteSize()) {
                    throw new GraphlaneException("tensor " + lease.name() + ": the lease holds " + bytes.remaining()
                            + " bytes, its spec " + encoded + " needs " + encoded.byteSize());
                }
            } catch (RuntimeException | Error e) {
                failAfterNothingEnqueued(m, e); // bad data fails the realization; it never reaches the device
                return;
            }
            upload(m, bytes, encoded.dtype(), loadingLane);
        });
        return m;
    }

    @Override
    public GpuMaterialization materializeRecipe(WeightRecipe recipe, GpuStream loadingLane) {
        Objects.requireNonNull(recipe, "recipe");
        List<EncodedLease> sources = recipe.acquireSources();
        TensorSpec output = recipe.output();
        if (output.byteSize() > Integer.MAX_VALUE) {
            sources.forEach(EncodedLease::release);
            throw new GraphlaneException("recipe " + recipe.name() + " derives " + output + " (" + output.byteSize()
                    + " bytes); derived weights above 2 GiB are not supported on the GPU backend, load it unsplit or shard it");
        }
        GpuMaterialization m = start(recipe.name(), sources, output, loadingLane);
        staging.execute(() -> {
            ByteBuffer derived;
            try {
                derived = ByteBuffer.allocateDirect((int) output.byteSize()).order(ByteOrder.LITTLE_ENDIAN);
                recipe.evaluate(sources, derived);
                derived.clear();
            } catch (RuntimeException | Error e) {
                failAfterNothingEnqueued(m, e);
                return;
            }
            upload(m, derived, output.dtype(), loadingLane);
        });
        return m;
    }

    @Override
    public GpuWeight finishMaterialization(GpuMaterialization m) throws InterruptedException {
        Outcome outcome = m.completion().await();
        m.releaseLeases();
        if (outcome instanceof Outcome.Failed failed) {
            throw new CompletionFailedException("materializing " + m.name() + " on " + device.deviceName() + " failed: "
                    + failed.cause().getMessage(), failed.cause());
        }
        return m.weight();
    }

    @Override
    public GpuWeight shareMaterializedWeight(GpuWeight weight) {
        return weight.share();
    }

    @Override
    public void validateBind(GpuParameter parameter, GpuWeight weight) {
        if (!parameter.name().equals(weight.name())) {
            throw new GraphlaneException("bind: parameter " + parameter.name() + " cannot take weight " + weight.name());
        }
        if (!parameter.expected().equals(weight.spec())) {
            throw new GraphlaneException("bind: parameter " + parameter.name() + " expects " + parameter.expected() + " but weight is " + weight.spec());
        }
        if (weight.storage().device() != device) {
            throw new GraphlaneException("bind: weight " + weight.name() + " is on " + weight.storage().device().deviceName()
                    + ", parameter " + parameter.name() + " on " + device.deviceName());
        }
    }

    @Override
    public void bind(GpuParameter parameter, GpuWeight weight) {
        parameter.set(weight);
    }

    @Override
    public void unbind(GpuParameter parameter, GpuWeight weight) {
        parameter.unset(weight);
    }

    /** Stops the staging thread after the uploads already started. */
    @Override
    public void close() {
        staging.shutdown();
    }

    private GpuMaterialization start(String name, List<EncodedLease> leases, TensorSpec encoded, GpuStream lane) {
        if (lane.backend() != device) {
            leases.forEach(EncodedLease::release);
            throw new IllegalArgumentException("materialize " + name + ": lane " + lane.name() + " is not on " + device.deviceName());
        }
        TensorSpec onDevice = new TensorSpec(onDevice(encoded.dtype()), encoded.shape());
        DeviceBuffer storage;
        try {
            storage = DeviceBuffer.allocate(lane, onDevice.byteSize()); // in the loading lane's order, before the copies
        } catch (RuntimeException e) {
            leases.forEach(EncodedLease::release);
            throw e;
        }
        GpuWeight weight = GpuWeight.own(name, onDevice, storage);
        return new GpuMaterialization(name, leases, weight, new SettableCompletion(device.deviceName() + " materialize " + name));
    }

    /** Runs on the staging thread: fills staging buffers in turn and enqueues their copies; never on the caller's thread. */
    private void upload(GpuMaterialization m, ByteBuffer source, DType encoded, GpuStream lane) {
        boolean widen = onDevice(encoded) != encoded;
        StagingPlan plan;
        try {
            plan = StagingPlan.of(source.remaining(), encoded.byteSize(), onDevice(encoded).byteSize(),
                    device.options().stagingChunkBytes(), device.options().stagingBuffers());
        } catch (RuntimeException | Error e) {
            failAfterNothingEnqueued(m, e);
            return;
        }
        if (plan.chunks().isEmpty()) {
            m.settable().succeed();
            return;
        }
        int slots = Math.min(plan.chunks().size(), device.options().stagingBuffers());
        List<AutoCloseable> scratch = new ArrayList<>();
        List<GpuCompletion> copies = new ArrayList<>();
        try {
            device.makeCurrent();
            PinnedBuffer[] pinned = new PinnedBuffer[slots];
            DeviceBuffer[] raw = new DeviceBuffer[slots];
            long chunkBytes = plan.chunks().get(0).length();
            for (int s = 0; s < slots; s++) {
                pinned[s] = PinnedBuffer.allocate(device, chunkBytes);
                scratch.add(pinned[s]);
                if (widen) {
                    raw[s] = DeviceBuffer.allocate(lane, chunkBytes);
                    scratch.add(raw[s]);
                }
            }
            String kernel = encoded == DType.F16 ? "gl_f16_to_f32" : "gl_bf16_to_f32";
            for (StagingPlan.Chunk chunk : plan.chunks()) {
                var previous = plan.previousUserOfSlot(chunk, slots);
                if (previous.isPresent() && !copies.get(previous.get().index()).awaitUninterruptibly().isSuccess()) {
                    break; // the failure is reported through the last copy's completion below
                }
                ByteBuffer target = pinned[chunk.slot()].buffer();
                target.put(source.slice((int) chunk.sourceOffset(), (int) chunk.length()));
                CUdeviceptr destination = m.weight().storage().pointer(chunk.destinationOffset());
                Pointer host = pinned[chunk.slot()].pointer();
                DeviceBuffer staged = raw[chunk.slot()];
                copies.add(device.submit(lane, stream -> {
                    if (!widen) {
                        check(JCudaDriver.cuMemcpyHtoDAsync(destination, host, chunk.length(), stream.cuStream()), "cuMemcpyHtoDAsync", m);
                        return;
                    }
                    check(JCudaDriver.cuMemcpyHtoDAsync(staged.pointer(), host, chunk.length(), stream.cuStream()), "cuMemcpyHtoDAsync", m);
                    kernels.launch(stream, kernel, LaunchGeometry.elementwiseGrid(chunk.elements(), KernelSources.BLOCK),
                            KernelSources.BLOCK, 0, Pointer.to(staged.pointer()), Pointer.to(destination),
                            Pointer.to(new long[] {chunk.elements()}));
                }));
            }
        } catch (RuntimeException | Error e) {
            if (copies.isEmpty()) {
                scratch.forEach(GpuParameterBackend::closeQuietly);
                failAfterNothingEnqueued(m, e);
                return;
            }
            copies.add(lastCopyFailing(lane, e));
        }
        // The lane runs copies in order: the last one's completion covers them all.
        GpuCompletion last = copies.get(copies.size() - 1);
        for (AutoCloseable buffer : scratch) {
            device.retainUntilComplete(lane, last, buffer);
        }
        java.util.concurrent.atomic.AtomicInteger remaining = new java.util.concurrent.atomic.AtomicInteger(copies.size());
        for (GpuCompletion copy : copies) {
            copy.whenDone(ignored -> {
                if (remaining.decrementAndGet() != 0) {
                    return;
                }
                Outcome result = copies.stream().map(c -> c.outcome().orElseThrow()).filter(o -> !o.isSuccess())
                        .findFirst().orElse(Outcome.SUCCESS);
                if (!result.isSuccess()) {
                    device.retainUntilComplete(lane, last, m.weight()); // frees the half-written weight, after the copies
                }
                m.settable().record(result);
            });
        }
    }

    /** A submission that fails with {@code cause} once the copies already enqueued have finished. */
    private GpuCompletion lastCopyFailing(GpuStream lane, Throwable cause) {
        return device.submit(lane, stream -> {
            throw cause instanceof RuntimeException re ? re : new GraphlaneException(cause.toString(), cause);
        });
    }

    private void failAfterNothingEnqueued(GpuMaterialization m, Throwable cause) {
        m.weight().close();
        m.settable().fail(cause);
    }

    private static void check(int result, String call, GpuMaterialization m) {
        if (result != CUresult.CUDA_SUCCESS) {
            throw new GraphlaneException(call + " failed while materializing " + m.name() + ": " + CUresult.stringFor(result) + " (" + result + ")");
        }
    }

    private static void closeQuietly(AutoCloseable c) {
        try {
            c.close();
        } catch (Exception ignored) {
            // freeing scratch of an upload that never started; nothing was enqueued that reads it
        }
    }
}
