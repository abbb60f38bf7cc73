package io.graphlane.inference.offload;

import io.graphlane.backend.cpu.CpuBackend;
import io.graphlane.backend.cpu.CpuCompletion;
import io.graphlane.backend.cpu.CpuExecutor;
import io.graphlane.backend.cpu.nn.CpuTensor;
import io.graphlane.backend.cpu.nn.CpuTensorBytes;
import io.graphlane.backend.cpu.param.CpuStorage;
import io.graphlane.backend.cpu.param.CpuWeight;
import io.graphlane.backend.cpu.transfer.CpuDevicePool;
import io.graphlane.backend.cpu.transfer.CpuHostBuffer;
import io.graphlane.backend.cpu.transfer.CpuTransfer;
import io.graphlane.backend.cpu.transfer.CpuTransferBackend;
import io.graphlane.core.tensor.DType;
import io.graphlane.core.tensor.Shape;
import io.graphlane.core.tensor.TensorSpec;
import io.graphlane.inference.llama.LayerWeights;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * The CPU's layer tier: the loaded weights are the host tier (read in place, as the supervisor bound them), and a
 * promotion copies each tensor's bytes through the {@link CpuTransferBackend} into its {@link CpuDevicePool}; the
 * device copy is a tensor of the same kind (F32, or the same packed encoding) over the copied bytes. The pool takes a
 * copy's bytes when the promotion is enqueued and gives them back when the copy and the reader have both let go.
 */
public final class CpuLayerTier implements LayerTier<CpuTensor, CpuExecutor, CpuCompletion> {
    private final CpuBackend device;
    private final CpuTransferBackend transfer;

    /** Promotions on lanes of {@code device} into {@code pool}. */
    public CpuLayerTier(CpuBackend device, CpuDevicePool pool) {
        this.device = Objects.requireNonNull(device, "device");
        this.transfer = new CpuTransferBackend(device, pool);
    }

    /** The device tier's pool. */
    public CpuDevicePool pool() {
        return transfer.pool();
    }

    @Override
    public long bytes(CpuTensor tensor) {
        return CpuTensorBytes.of(tensor).remaining();
    }

    @Override
    public long bytes(LayerWeights<CpuTensor> layer) {
        long b = 0;
        for (CpuTensor t : LayerTensors.of(layer, CpuTensor.class)) {
            b += CpuTensorBytes.of(t).remaining();
        }
        return b;
    }

    @Override
    public Promotion<CpuTensor, CpuCompletion> promote(CpuExecutor lane, String name, LayerWeights<CpuTensor> host) {
        List<CpuWeight> made = new ArrayList<>();
        CpuCompletion[] last = new CpuCompletion[1];
        LayerWeights<CpuTensor> device;
        try {
            device = LayerTensors.map(host, CpuTensor.class, (component, tensor) -> {
                ByteBuffer bytes = CpuTensorBytes.of(tensor);
                String tensorName = name + "." + component;
                CpuHostBuffer source = new CpuHostBuffer(new CpuWeight(tensorName, new TensorSpec(DType.U8, Shape.of(bytes.remaining())),
                        CpuStorage.mappedView(tensorName, bytes)));
                try {
                    if (last[0] != null) {
                        this.device.orderAfter(last[0], lane); // a failed copy poisons the next, so the last completion covers all
                    }
                    CpuTransfer<CpuWeight> copy = transfer.promote(lane, source);
                    made.add(copy.destination());
                    last[0] = copy.completion();
                    return CpuTensorBytes.sameKind(tensor, copy.destination().bytes());
                } finally {
                    source.close(); // the copy holds its own handle on the source until it completes
                }
            });
        } catch (RuntimeException | Error e) {
            made.forEach(CpuWeight::close); // each running copy keeps its destination until it completes
            throw e;
        }
        if (last[0] == null) {
            throw new IllegalArgumentException("layer " + name + " holds no CPU tensor to promote");
        }
        return new Promotion<>(device, last[0], () -> made.forEach(CpuWeight::close));
    }
}
