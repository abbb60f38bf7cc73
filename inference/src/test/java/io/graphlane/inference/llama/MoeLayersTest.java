package io.graphlane.inference.llama;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.graphlane.backend.cpu.nn.CpuTensor;
import io.graphlane.checkpoint.config.MoeConfig;
import io.graphlane.inference.generate.StagedModel;
import io.graphlane.inference.stage.StagePlan;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * The laws of the sparse mixture-of-experts block, on small in-memory models: identical experts with renormalised
 * routing are the dense MLP; a router that sees every expert alike picks the lowest indices (torch.topk's order on
 * ties), so top-1 runs expert 0 alone; without renormalisation the block is the kept probabilities' share of the MLP;
 * and the rows of several requests batched in one step give each request what it gets alone.
 */
class MoeLayersTest {
    private static final int EXPERTS = 4;

    private static LlamaConfig dense() {
        return TestModels.small(false, false);
    }

    private static LlamaConfig moe(int perToken, boolean renormalize) {
        LlamaConfig d = dense();
        return d.withMoe(new MoeConfig(EXPERTS, perToken, d.intermediateSize(), renormalize,
                Collections.nCopies(d.layerCount(), true), true));
    }

    /** Random weights for every tensor of {@code config} (norms near 1), from {@code seed}. */
    private static Map<String, float[]> random(LlamaConfig config, long seed) {
        Random r = new Random(seed);
        Map<String, float[]> out = new HashMap<>();
        for (LlamaTensors.Expected e : LlamaTensors.forStage(config, StagePlan.balanced(config.layerCount(), 1).stage(0))) {
            float[] a = new float[e.rows() * e.cols()];
            boolean norm = e.name().endsWith("norm.weight");
            for (int i = 0; i < a.length; i++) {
                a[i] = norm ? 1f + 0.1f * (float) r.nextGaussian() : (float) (r.nextGaussian() / Math.sqrt(e.cols()));
            }
            out.put(e.name(), a);
        }
        return out;
    }

    /** The MoE model's tensors: the dense model's, each layer's MLP copied into every expert, the router from {@code router}. */
    private static Map<String, float[]> expertsFromDense(LlamaConfig moeConfig, Map<String, float[]> dense, float[] router, int sameAs) {
        Map<String, float[]> out = new HashMap<>();
        Map<String, float[]> other = random(moeConfig, 99);
        for (Map.Entry<String, float[]> e : dense.entrySet()) {
            if (!e.getKey().contains(".mlp.")) {
                out.put(e.getKey(), e.getValue());
            }
        }
        MoeConfig m = moeConfig.moe();
        for (int l = 0; l < moeConfig.layerCount(); l++) {
            out.put(m.routerName(l), router.clone());
            for (int x = 0; x < EXPERTS; x++) {
                boolean same = sameAs < 0 || x == sameAs;
                out.put(m.gateName(l, x), same ? dense.get(LlamaTensors.layer(l, "mlp.gate_proj.weight")) : other.get(m.gateName(l, x)));
                out.put(m.upName(l, x), same ? dense.get(LlamaTensors.layer(l, "mlp.up_proj.weight")) : other.get(m.upName(l, x)));
                out.put(m.downName(l, x), same ? dense.get(LlamaTensors.layer(l, "mlp.down_proj.weight")) : other.get(m.downName(l, x)));
            }
        }
        return out;
    }

    private static float[] randomRouter(LlamaConfig c, long seed) {
        Random r = new Random(seed);
        float[] a = new float[EXPERTS * c.hiddenSize()];
        for (int i = 0; i < a.length; i++) {
            a[i] = (float) r.nextGaussian();
        }
        return a;
    }

    private static final int[] PROMPT = {3, 14, 15, 9, 26, 5, 35, 8};

    private static float[] lastLogits(LlamaConfig config, Map<String, float[]> tensors, int[] prompt) {
        try (StagedModel<CpuTensor> model = TestModels.staged(config, tensors, 1)) {
            return model.step(List.of(new Segment(1, 0, prompt.length)), prompt)[0];
        }
    }

    private static void assertClose(float[] expected, float[] found, double tolerance, String what) {
        double worst = 0;
        for (int i = 0; i < expected.length; i++) {
            worst = Math.max(worst, Math.abs(expected[i] - found[i]));
        }
        assertTrue(worst <= tolerance, what + ": off by " + worst);
    }

    @Test
    void identicalExpertsWithRenormalisedRoutingAreTheDenseMlp() {
        Map<String, float[]> denseWeights = random(dense(), 1);
        float[] expected = lastLogits(dense(), denseWeights, PROMPT);
        LlamaConfig sparse = moe(2, true);
        float[] found = lastLogits(sparse, expertsFromDense(sparse, denseWeights, randomRouter(sparse, 2), -1), PROMPT);
        assertClose(expected, found, 1e-4, "identical experts, top-2 renormalised");
    }

    @Test
    void withoutRenormalisationTheBlockIsTheKeptProbabilitiesShareOfTheMlp() {
        Map<String, float[]> denseWeights = random(dense(), 1);
        // an all-zero router: every probability is 1/4, so top-2 without renormalisation is half the MLP
        LlamaConfig sparse = moe(2, false);
        float[] found = lastLogits(sparse, expertsFromDense(sparse, denseWeights, new float[EXPERTS * sparse.hiddenSize()], -1), PROMPT);
        Map<String, float[]> halved = new HashMap<>(denseWeights);
        for (int l = 0; l < dense().layerCount(); l++) {
            float[] down = denseWeights.get(LlamaTensors.layer(l, "mlp.down_proj.weight")).clone();
            for (int i = 0; i < down.length; i++) {
                down[i] *= 0.5f;
            }
            halved.put(LlamaTensors.layer(l, "mlp.down_proj.weight"), down);
        }
        assertClose(lastLogits(dense(), halved, PROMPT), found, 1e-4, "top-2 of 4 equal probabilities, not renormalised");
    }

    @Test
    void aRouterThatSeesEveryExpertAlikePicksTheLowestIndexFirst() {
        MoeRouting tie = MoeRouting.route(new float[] {0.5f, 0.5f, 0.5f, 0.5f, 1f, 2f, 2f, 0f}, 2, 4, 2, true);
        assertArrayEquals(new int[] {0, 1, 1, 2}, tie.experts(), "ties go to the lower index, in descending probability");
        assertArrayEquals(new float[] {0.5f, 0.5f, 0.5f, 0.5f}, tie.weights(), 1e-7f);
        // top-1 of an all-zero router is expert 0 alone with weight 1: the dense MLP of expert 0, whatever the others hold
        Map<String, float[]> denseWeights = random(dense(), 3);
        LlamaConfig sparse = moe(1, true);
        float[] found = lastLogits(sparse, expertsFromDense(sparse, denseWeights, new float[EXPERTS * sparse.hiddenSize()], 0), PROMPT);
        assertClose(lastLogits(dense(), denseWeights, PROMPT), found, 1e-4, "a router that always picks expert 0");
        // and a different expert 0 changes the answer (the others are not what ran)
        float[] other = lastLogits(sparse, expertsFromDense(sparse, denseWeights, new float[EXPERTS * sparse.hiddenSize()], 1), PROMPT);
        double worst = 0;
        for (int i = 0; i < found.length; i++) {
            worst = Math.max(worst, Math.abs(found[i] - other[i]));
        }
        assertTrue(worst > 1e-2, "expert 0 differs from the others here, so the logits must too: " + worst);
    }

    @Test
    void requestsBatchedInOneStepGetWhatEachGetsAlone() {
        LlamaConfig sparse = moe(2, true);
        Map<String, float[]> weights = random(sparse, 5);
        int[] a = {1, 2, 3, 4, 5};
        int[] b = {9, 8, 7};
        float[] aloneA = lastLogits(sparse, weights, a);
        float[] aloneB = lastLogits(sparse, weights, b);
        int[] both = new int[a.length + b.length];
        System.arraycopy(a, 0, both, 0, a.length);
        System.arraycopy(b, 0, both, a.length, b.length);
        try (StagedModel<CpuTensor> model = TestModels.staged(sparse, weights, 2)) {
            float[][] logits = model.step(List.of(new Segment(1, 0, a.length), new Segment(2, 0, b.length)), both);
            assertClose(aloneA, logits[0], 1e-5, "request 1 batched with request 2");
            assertClose(aloneB, logits[1], 1e-5, "request 2 batched with request 1");
        }
    }

    @Test
    void rowsAreGroupedPerExpertAcrossRequests() {
        // rows 0..2 of request 1 and rows 3..4 of request 2 (experts {0,1} {1,2} {0,2} {3,1} {0,3}): each expert gets all of its rows at once, ascending
        MoeRouting routing = new MoeRouting(5, 2, new int[] {0, 1, 1, 2, 0, 2, 3, 1, 0, 3}, new float[10]);
        int[] slots = new int[10];
        assertArrayEquals(new int[] {0, 2, 4}, routing.rowsOf(0, slots));
        assertArrayEquals(new int[] {0, 1, 3}, routing.rowsOf(1, slots));
        assertEquals(3, routing.count(0));
        assertArrayEquals(new int[] {3, 4}, routing.rowsOf(3, slots));
        assertArrayEquals(new int[] {6, 9}, java.util.Arrays.copyOf(slots, 2), "the routing entries of expert 3's rows");
    }
}
