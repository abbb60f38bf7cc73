package io.graphlane.inference.generate;

import io.graphlane.inference.llama.Segment;
import io.graphlane.inference.sampling.Sampler;
import java.util.ArrayList;
import java.util.List;

/**
 * Generates continuations of several prompts at once over a {@link StagedModel} on the calling
 * thread: one prefill step for all prompts, then decode steps that batch every request still
 * running. Each request samples with its own seeded {@link Sampler}, so its tokens do not
 * depend on the others in the batch. The pipelined engine must produce the same tokens.
 */
public final class SequentialGenerator {
    private SequentialGenerator() {
    }

    /** Receives each token as it is chosen. */
    @FunctionalInterface
    public interface TokenListener {
        /** Token {@code token} was appended to request {@code index} (its position in the request list). */
        void onToken(int index, int token);
    }

    /** Generates every request's tokens; the model's caches for them are freed at the end. */
    public static <T> List<int[]> generate(StagedModel<T> model, List<SequentialRequest> requests) {
        return generate(model, requests, (index, token) -> { });
    }

    /** As {@link #generate(StagedModel, List)}, telling {@code listener} each token as it is chosen. */
    public static <T> List<int[]> generate(StagedModel<T> model, List<SequentialRequest> requests, TokenListener listener) {
        int n = requests.size();
        List<List<Integer>> generated = new ArrayList<>(n);
        Sampler[] samplers = new Sampler[n];
        int[] positions = new int[n];
        int[] nextToken = new int[n];
        boolean[] running = new boolean[n];
        long firstId = RequestIds.next(n);
        try {
            List<Segment> segments = new ArrayList<>(n);
            int total = 0;
            for (int i = 0; i < n; i++) {
                samplers[i] = new Sampler(requests.get(i).sampling(), requests.get(i).promptIds());
                generated.add(new ArrayList<>());
                int length = requests.get(i).promptIds().length;
                segments.add(new Segment(firstId + i, 0, length));
                positions[i] = length;
                total += length;
                running[i] = true;
            }
            int[] promptTokens = new int[total];
            int offset = 0;
            for (SequentialRequest request : requests) {
                int[] ids = request.promptIds();
                System.arraycopy(ids, 0, promptTokens, offset, ids.length);
                offset += ids.length;
            }
            float[][] logits = model.step(segments, promptTokens);
            int[] active = new int[n];
            for (int i = 0; i < n; i++) {
                active[i] = i;
            }
            int activeCount = n;
            while (activeCount > 0) {
                int stillRunning = 0;
                for (int a = 0; a < activeCount; a++) {
                    int i = active[a];
                    int token = samplers[i].sample(logits[a]);
                    generated.get(i).add(token);
                    listener.onToken(i, token);
                    SequentialRequest request = requests.get(i);
                    if (generated.get(i).size() >= request.maxNewTokens() || request.stopTokenIds().contains(token)) {
                        running[i] = false;
                        model.endRequest(firstId + i);
                    } else {
                        nextToken[i] = token;
                        active[stillRunning++] = i;
                    }
                }
                activeCount = stillRunning;
                if (activeCount == 0) {
                    break;
                }
                List<Segment> decode = new ArrayList<>(activeCount);
                int[] tokens = new int[activeCount];
                for (int a = 0; a < activeCount; a++) {
                    int i = active[a];
                    decode.add(new Segment(firstId + i, positions[i], 1));
                    tokens[a] = nextToken[i];
                    positions[i]++;
                }
                logits = model.step(decode, tokens);
            }
        } finally {
            for (int i = 0; i < n; i++) {
                if (running[i]) {
                    model.endRequest(firstId + i);
                }
            }
        }
        List<int[]> result = new ArrayList<>(n);
        for (List<Integer> tokens : generated) {
            result.add(tokens.stream().mapToInt(Integer::intValue).toArray());
        }
        return result;
    }
}
