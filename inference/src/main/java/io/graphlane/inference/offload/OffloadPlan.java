package io.graphlane.inference.offload;

import io.graphlane.core.GraphlaneException;
import io.graphlane.inference.backend.CacheMemory;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Objects;

/**
 * Which decoder layers stay resident on the device under a weights budget, and which are streamed from host memory
 * before each use. The weights outside the layers (embedding, final norm, head) always stay resident. Each stage that
 * streams holds at most {@code lookahead + 1} promoted layers at once (the one its compute lane reads and the ones its
 * transfer lane promotes ahead), so it reserves its {@code lookahead + 1} largest layers as a streaming window; the
 * rest of the budget keeps as many layer bytes resident as fit, largest first, which minimises the bytes moved per
 * token. Among layers of equal size the resident ones are spread evenly over the stage, its first layer resident, so
 * that each promotion overlaps the compute of the layers before it. If the window does not fit, the lookahead shrinks
 * to what does (down to 0: promote, compute, promote).
 *
 * <p>Refused, naming both sizes: a budget smaller than the fixed weights plus, on every stage, its largest layer.
 */
public final class OffloadPlan {

    /**
     * One stage's part of the plan.
     *
     * @param stage      the stage's index
     * @param firstLayer the model's index of the stage's first layer
     * @param layerBytes the bytes of each of the stage's layers, in order
     * @param resident   per layer, whether it stays on the device
     * @param lookahead  how many streamed layers the transfer lane may promote ahead of the one the compute lane reads
     */
    public record Stage(int stage, int firstLayer, long[] layerBytes, boolean[] resident, int lookahead) {
        public Stage {
            layerBytes = layerBytes.clone();
            resident = resident.clone();
            if (layerBytes.length != resident.length) {
                throw new IllegalArgumentException("stage " + stage + ": " + layerBytes.length + " layer sizes but " + resident.length + " residency flags");
            }
        }

        /** Whether stage-local layer {@code l} stays resident. */
        public boolean isResident(int l) {
            return resident[l];
        }

        /** Whether any layer of this stage is streamed. */
        public boolean streams() {
            for (boolean r : resident) {
                if (!r) {
                    return true;
                }
            }
            return false;
        }

        /** How many layers of this stage are streamed. */
        public int streamedCount() {
            int n = 0;
            for (boolean r : resident) {
                n += r ? 0 : 1;
            }
            return n;
        }

        /** Bytes of this stage's layers that stay resident. */
        public long residentBytes() {
            long b = 0;
            for (int l = 0; l < resident.length; l++) {
                b += resident[l] ? layerBytes[l] : 0;
            }
            return b;
        }

        /** Bytes this stage promotes per step. */
        public long streamedBytes() {
            long b = 0;
            for (int l = 0; l < resident.length; l++) {
                b += resident[l] ? 0 : layerBytes[l];
            }
            return b;
        }

        /** The most bytes of promoted layers this stage holds at once: its {@code lookahead + 1} largest streamed layers. */
        public long windowBytes() {
            long[] streamed = new long[streamedCount()];
            int n = 0;
            for (int l = 0; l < resident.length; l++) {
                if (!resident[l]) {
                    streamed[n++] = layerBytes[l];
                }
            }
            return largest(streamed, lookahead + 1);
        }
    }

    private final long budgetBytes;
    private final long fixedBytes;
    private final int requestedLookahead;
    private final List<Stage> stages;

    private OffloadPlan(long budgetBytes, long fixedBytes, int requestedLookahead, List<Stage> stages) {
        this.budgetBytes = budgetBytes;
        this.fixedBytes = fixedBytes;
        this.requestedLookahead = requestedLookahead;
        this.stages = List.copyOf(stages);
    }

    /**
     * The plan for a budget of {@code budgetBytes}, weights outside the layers of {@code fixedBytes}, and per stage the
     * bytes of each of its layers ({@code stageLayerBytes}, in pipeline order, stage k's first layer after stage
     * k−1's last), promoting up to {@code lookahead} layers ahead.
     *
     * @throws GraphlaneException naming the option, the budget and what it must hold at least, if it is too small
     */
    public static OffloadPlan plan(long budgetBytes, long fixedBytes, List<long[]> stageLayerBytes, int lookahead) {
        Objects.requireNonNull(stageLayerBytes, "stageLayerBytes");
        if (budgetBytes <= 0) {
            throw new GraphlaneException("--device-weights-budget must be a positive size, got " + budgetBytes + " bytes");
        }
        if (lookahead < 0) {
            throw new GraphlaneException("--offload-lookahead must be >= 0 layers, got " + lookahead);
        }
        if (stageLayerBytes.isEmpty()) {
            throw new IllegalArgumentException("an offload plan needs at least one stage");
        }
        int stageCount = stageLayerBytes.size();
        long total = fixedBytes;
        long largest = 0;
        int largestLayer = -1;
        long minimum = fixedBytes;
        int layer = 0;
        for (long[] stage : stageLayerBytes) {
            long stageLargest = 0;
            for (long b : stage) {
                total += b;
                stageLargest = Math.max(stageLargest, b);
                if (b > largest) {
                    largest = b;
                    largestLayer = layer;
                }
                layer++;
            }
            minimum += stageLargest;
        }
        if (total <= budgetBytes) {
            List<Stage> all = new ArrayList<>();
            int first = 0;
            for (int s = 0; s < stageCount; s++) {
                long[] bytes = stageLayerBytes.get(s);
                boolean[] resident = new boolean[bytes.length];
                Arrays.fill(resident, true);
                all.add(new Stage(s, first, bytes, resident, lookahead));
                first += bytes.length;
            }
            return new OffloadPlan(budgetBytes, fixedBytes, lookahead, all);
        }
        if (budgetBytes < minimum) {
            String needs = "the largest layer (layer " + largestLayer + ", " + size(largest) + ")"
                    + (stageCount > 1 ? ", each of the " + stageCount + " stages needing room for its own largest," : "")
                    + (fixedBytes > 0 ? " plus the embedding, final norm and head that stay resident (" + size(fixedBytes) + ")" : "")
                    + (stageCount > 1 || fixedBytes > 0 ? ": at least " + size(minimum) : "");
            throw new GraphlaneException("--device-weights-budget " + size(budgetBytes) + " is smaller than " + needs);
        }
        for (int l = lookahead; l >= 0; l--) {
            List<Stage> stages = fit(budgetBytes - fixedBytes, stageLayerBytes, l);
            if (stages != null) {
                return new OffloadPlan(budgetBytes, fixedBytes, lookahead, stages);
            }
        }
        throw new IllegalStateException("a budget of at least " + minimum + " bytes always fits a lookahead of 0");
    }

    /**
     * The stages' residency for {@code available} layer bytes at lookahead {@code lookahead}, or null if no window fits.
     * For each size x of a layer: layers larger than x stay resident, each stage reserves a window of its
     * {@code lookahead + 1} largest layers up to x, and the rest fills largest first; then windows are sized by the
     * layers that actually stream and the fill runs again with what that frees. The fit that keeps the most bytes
     * resident while resident bytes plus windows stay within {@code available} wins.
     */
    private static List<Stage> fit(long available, List<long[]> stageLayerBytes, int lookahead) {
        int stageCount = stageLayerBytes.size();
        long[] sizes = stageLayerBytes.stream().flatMapToLong(Arrays::stream).distinct().sorted().toArray();
        boolean[][] best = null;
        long bestResident = -1;
        for (long x : sizes) {
            long[] windows = new long[stageCount];
            boolean[][] forced = new boolean[stageCount][];
            for (int s = 0; s < stageCount; s++) {
                long[] bytes = stageLayerBytes.get(s);
                forced[s] = new boolean[bytes.length];
                windows[s] = largest(Arrays.stream(bytes).filter(b -> b <= x).toArray(), lookahead + 1);
                for (int l = 0; l < bytes.length; l++) {
                    forced[s][l] = bytes[l] > x;
                }
            }
            for (int round = 0; round < 3; round++) {
                boolean[][] resident = fillLargestFirst(stageLayerBytes, forced, available - Arrays.stream(windows).sum());
                if (resident == null) {
                    break;
                }
                long residentBytes = 0;
                long[] actual = new long[stageCount];
                for (int s = 0; s < stageCount; s++) {
                    long[] bytes = stageLayerBytes.get(s);
                    long[] streamed = new long[bytes.length];
                    int n = 0;
                    for (int l = 0; l < bytes.length; l++) {
                        if (resident[s][l]) {
                            residentBytes += bytes[l];
                        } else {
                            streamed[n++] = bytes[l];
                        }
                    }
                    actual[s] = largest(Arrays.copyOf(streamed, n), lookahead + 1);
                }
                if (residentBytes + Arrays.stream(actual).sum() <= available && residentBytes > bestResident) {
                    best = resident;
                    bestResident = residentBytes;
                }
                if (Arrays.equals(actual, windows)) {
                    break;
                }
                windows = actual;
            }
        }
        if (best == null) {
            return null;
        }
        List<Stage> stages = new ArrayList<>();
        int first = 0;
        for (int s = 0; s < stageCount; s++) {
            long[] bytes = stageLayerBytes.get(s);
            stages.add(new Stage(s, first, bytes, spread(bytes, best[s]), lookahead));
            first += bytes.length;
        }
        return stages;
    }

    /**
     * Residency flags: the {@code forced} layers, then the largest others while they fit in {@code capacity} (ties go
     * round the stages); null if the forced ones do not fit.
     */
    private static boolean[][] fillLargestFirst(List<long[]> stageLayerBytes, boolean[][] forced, long capacity) {
        record Candidate(int stage, int layer, long bytes) { }
        List<Candidate> candidates = new ArrayList<>();
        boolean[][] resident = new boolean[stageLayerBytes.size()][];
        long left = capacity;
        for (int s = 0; s < stageLayerBytes.size(); s++) {
            long[] bytes = stageLayerBytes.get(s);
            resident[s] = new boolean[bytes.length];
            for (int l = 0; l < bytes.length; l++) {
                if (forced[s][l]) {
                    resident[s][l] = true;
                    left -= bytes[l];
                } else {
                    candidates.add(new Candidate(s, l, bytes[l]));
                }
            }
        }
        if (left < 0) {
            return null;
        }
        candidates.sort((a, b) -> a.bytes() != b.bytes() ? Long.compare(b.bytes(), a.bytes())
                : a.layer() != b.layer() ? Integer.compare(a.layer(), b.layer()) : Integer.compare(a.stage(), b.stage()));
        for (Candidate c : candidates) {
            if (c.bytes() <= left) {
                resident[c.stage()][c.layer()] = true;
                left -= c.bytes();
            }
        }
        return resident;
    }

    /**
     * The same count of resident layers per size as {@code chosen}, placed evenly over the stage with its first layer
     * resident, so that each streamed layer follows resident compute that hides its promotion.
     */
    private static boolean[] spread(long[] bytes, boolean[] chosen) {
        boolean[] out = new boolean[bytes.length];
        long[] sizes = Arrays.stream(bytes).distinct().toArray();
        for (long size : sizes) {
            List<Integer> at = new ArrayList<>();
            int keep = 0;
            for (int l = 0; l < bytes.length; l++) {
                if (bytes[l] == size) {
                    at.add(l);
                    keep += chosen[l] ? 1 : 0;
                }
            }
            int n = at.size();
            for (int i = 0; i < n; i++) {
                // the j-th from the end is resident where floor((j+1)·keep/n) steps past floor(j·keep/n): keep of n, evenly, the first among them
                int j = n - 1 - i;
                out[at.get(i)] = (long) (j + 1) * keep / n > (long) j * keep / n;
            }
        }
        return out;
    }

    private static long largest(long[] values, int count) {
        long[] sorted = values.clone();
        Arrays.sort(sorted);
        long sum = 0;
        for (int i = sorted.length - 1; i >= 0 && i >= sorted.length - count; i--) {
            sum += sorted[i];
        }
        return sum;
    }

    /** {@code bytes} for a message: the readable size and the exact count. */
    static String size(long bytes) {
        return CacheMemory.format(bytes) + " (" + bytes + " bytes)";
    }

    /** The budget asked for. */
    public long budgetBytes() {
        return budgetBytes;
    }

    /** The weights outside the layers, always resident. */
    public long fixedBytes() {
        return fixedBytes;
    }

    /** Per stage, its residency. */
    public List<Stage> stages() {
        return stages;
    }

    /** Whether any layer is streamed. */
    public boolean streams() {
        return stages.stream().anyMatch(Stage::streams);
    }

    /** Bytes promoted per step through the whole pipeline (per token of a decode step, whatever the batch). */
    public long streamedBytesPerStep() {
        return stages.stream().mapToLong(Stage::streamedBytes).sum();
    }

    /** The most weight bytes on the device at once: the fixed weights, the resident layers and every stage's window. */
    public long peakDeviceBytes() {
        long b = fixedBytes;
        for (Stage s : stages) {
            b += s.residentBytes() + (s.streams() ? s.windowBytes() : 0);
        }
        return b;
    }

    /** The plan in a few lines, for the log at start. */
    public List<String> describe() {
        List<String> lines = new ArrayList<>();
        int layers = stages.stream().mapToInt(s -> s.layerBytes().length).sum();
        int streamed = stages.stream().mapToInt(Stage::streamedCount).sum();
        lines.add(String.format(Locale.ROOT, "device weights budget %s: %d of %d layers resident, %d streamed from host memory;"
                        + " %s moved per step; at most %s on the device (fixed weights %s)",
                CacheMemory.format(budgetBytes), layers - streamed, layers, streamed, CacheMemory.format(streamedBytesPerStep()),
                CacheMemory.format(peakDeviceBytes()), CacheMemory.format(fixedBytes)));
        for (Stage s : stages) {
            StringBuilder map = new StringBuilder();
            for (int l = 0; l < s.resident().length; l++) {
                map.append(s.resident()[l] ? 'R' : 'S');
            }
            lines.add(String.format(Locale.ROOT, "  stage %d layers %d-%d: %s (R resident, S streamed)%s", s.stage(), s.firstLayer(),
                    s.firstLayer() + s.layerBytes().length - 1, map,
                    s.streams() ? String.format(Locale.ROOT, ", lookahead %d%s, window %s", s.lookahead(),
                            s.lookahead() < requestedLookahead ? " (asked " + requestedLookahead + ", the budget fits no more)" : "",
                            CacheMemory.format(s.windowBytes())) : ""));
        }
        return lines;
    }
}
