package io.graphlane.backend.cpu.param;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.graphlane.backend.cpu.CpuBackend;
import io.graphlane.backend.cpu.CpuExecutor;
import io.graphlane.checkpoint.CheckpointSource;
import io.graphlane.checkpoint.recipe.DerivedWeight;
import io.graphlane.checkpoint.recipe.Recipe;
import io.graphlane.checkpoint.safetensors.SafetensorsWriter;
import io.graphlane.core.tensor.DType;
import io.graphlane.core.tensor.TensorSpec;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The CPU parameter backend over real checkpoint leases: mapped F32 in place, BF16 widened, no lease left open. */
class CheckpointMaterializationTest {

    @Test
    void checkpointLeasesMaterializeInPlaceOrWidenedAndAreAllReleased(@TempDir Path dir) throws Exception {
        ByteBuffer bf16 = ByteBuffer.allocate(6).order(ByteOrder.LITTLE_ENDIAN);
        bf16.putShort((short) 0x3f80).putShort((short) 0xc000).putShort((short) 0x4040).flip();
        new SafetensorsWriter()
                .addF32("w.f32", new long[] {2, 3}, new float[] {1, 2, 3, 4, 5, 6})
                .add("w.bf16", TensorSpec.of(DType.BF16, 3), bf16)
                .write(dir.resolve("model.safetensors"));

        try (CpuBackend device = new CpuBackend("cpu-ckpt-test"); CheckpointSource source = CheckpointSource.open(dir)) {
            CpuExecutor loading = device.forkExecutors(device.rootExecutor(), 1).get(0);
            CpuParameterBackend params = new CpuParameterBackend(device);

            CpuWeight f32 = params.finishMaterialization(params.materialize(source.lease("w.f32"), loading));
            CpuWeight widened = params.finishMaterialization(params.materialize(source.lease("w.bf16"), loading));
            assertEquals(0, source.openLeaseCount(), "every lease is released once its materialization finished");

            assertTrue(f32.isZeroCopy(), "8-byte aligned safetensors F32 data is used in place");
            assertEquals(TensorSpec.of(DType.F32, 2, 3), f32.spec());
            assertEquals(6f, f32.floats().get(5), "the mapped view stays readable after its lease was released");
            assertFalse(widened.isZeroCopy());
            assertEquals(TensorSpec.of(DType.F32, 3), widened.spec());
            assertEquals(-2f, widened.floats().get(1));
            assertEquals(3f, widened.floats().get(2));
            f32.close();
            widened.close();
        }
    }

    @Test
    void fusedRecipeAndItsTensorParallelShardMaterializeToTheSameRows(@TempDir Path dir) throws Exception {
        new SafetensorsWriter()
                .addF32("q", new long[] {2, 2}, new float[] {1, 2, 3, 4})
                .addF32("k", new long[] {1, 2}, new float[] {5, 6})
                .addF32("v", new long[] {1, 2}, new float[] {7, 8})
                .write(dir.resolve("model.safetensors"));
        try (CpuBackend device = new CpuBackend("cpu-recipe-test"); CheckpointSource source = CheckpointSource.open(dir)) {
            CpuExecutor loading = device.forkExecutors(device.rootExecutor(), 1).get(0);
            CpuParameterBackend params = new CpuParameterBackend(device);
            DerivedWeight qkv = DerivedWeight.of("qkv", Recipe.concat(0,
                    Recipe.source(source, "q"), Recipe.source(source, "k"), Recipe.source(source, "v")).cast(DType.BF16));

            CpuWeight full = params.finishMaterialization(params.materializeRecipe(qkv, loading));
            CpuWeight shard = params.finishMaterialization(params.materializeRecipe(qkv.shard(0, 1, 3), loading));
            assertEquals(0, source.openLeaseCount());

            assertEquals(TensorSpec.of(DType.F32, 4, 2), full.spec(), "a BF16 recipe result is widened to F32");
            assertEquals(TensorSpec.of(DType.F32, 2, 2), shard.spec());
            for (int i = 0; i < 4; i++) {
                assertEquals(full.floats().get(2 + i), shard.floats().get(i), "element " + i + " of the shard");
            }
            assertEquals(5f, shard.floats().get(2));
            full.close();
            shard.close();
        }
    }
}
