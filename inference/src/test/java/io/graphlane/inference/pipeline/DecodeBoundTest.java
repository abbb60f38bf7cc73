package io.graphlane.inference.pipeline;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.graphlane.inference.llama.LlamaConfig;
import io.graphlane.inference.model.Fixture;
import io.graphlane.inference.model.ModelDirectory;
import org.junit.jupiter.api.Test;

class DecodeBoundTest {

    @Test
    void aDecodeStepReadsEveryF32WeightOfTheCheckpointButTheEmbeddingTableSaveOneRow() {
        ModelDirectory model = ModelDirectory.open(Fixture.dir(""));
        LlamaConfig c = model.config();
        long checkpointBytes = model.checkpoint().catalog().totalBytes(); // F32: every weight once, the embedding table included
        long embeddingTable = (long) c.vocabSize() * c.hiddenSize() * Float.BYTES;
        long oneRow = (long) c.hiddenSize() * Float.BYTES;
        assertEquals(checkpointBytes - embeddingTable + oneRow, DecodeBound.of(c, Float.BYTES).weightBytesPerToken());
    }

    @Test
    void theLimitIsTheBandwidthOverTheBytesOfOneStep() {
        DecodeBound bound = new DecodeBound(200_000_000L);
        assertEquals(150.0, bound.limitTokensPerSecond(30e9), 1e-9);
    }
}
