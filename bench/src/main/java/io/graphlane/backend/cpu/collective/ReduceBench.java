package io.graphlane.backend.cpu.collective;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.FloatBuffer;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.Warmup;

/**
 * The all-reduce's fold of one received chunk into the output ({@link ReduceOp#combine}, SUM, in place, the incoming
 * floats a little-endian view of a direct receive buffer as the socket plane hands them over) against the floor: a plain
 * counted loop over two float arrays that C2 vectorizes, and a plain loop over the same direct buffers (absolute gets and
 * puts). Figures are microseconds per chunk of {@code floats} floats; GB/s = 12 bytes per float (two read, one written) / time.
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(1)
public class ReduceBench {
    @Param({"262144"})
    int floats;

    /** The length of the member's two scratch arrays ({@code CpuCollectiveMember} uses 4096). */
    @Param({"4096"})
    int scratch;

    private float[] mineArray;
    private float[] incomingArray;
    private FloatBuffer mine;
    private FloatBuffer incoming;
    private float[] scratchA;
    private float[] scratchB;

    @Setup
    public void setUp() {
        scratchA = new float[scratch];
        scratchB = new float[scratch];
        mineArray = new float[floats];
        incomingArray = new float[floats];
        mine = ByteBuffer.allocateDirect(floats * Float.BYTES).order(ByteOrder.nativeOrder()).asFloatBuffer();
        incoming = ByteBuffer.allocateDirect(floats * Float.BYTES + 64).order(ByteOrder.LITTLE_ENDIAN)
                .slice(16, floats * Float.BYTES).order(ByteOrder.LITTLE_ENDIAN).asFloatBuffer();
        for (int i = 0; i < floats; i++) {
            mineArray[i] = i;
            incomingArray[i] = 1;
            mine.put(i, i);
            incoming.put(i, 1);
        }
    }

    /** The floor: a counted loop over two float arrays, vectorized by C2. */
    @Benchmark
    public float[] arrayLoop() {
        float[] a = mineArray;
        float[] b = incomingArray;
        for (int i = 0; i < a.length; i++) {
            a[i] += b[i];
        }
        return a;
    }

    /** What the member runs: {@link ReduceOp#combine} from direct buffer to direct buffer, in place. */
    @Benchmark
    public FloatBuffer reduceOpCombine() {
        ReduceOp.SUM.combine(mine, 0, mine, 0, incoming, 0, floats, scratchA, scratchB);
        return mine;
    }

    /** A plain loop of absolute gets and puts over the same direct buffers. */
    @Benchmark
    public FloatBuffer directBufferLoop() {
        FloatBuffer out = mine;
        FloatBuffer in = incoming;
        int n = floats;
        for (int i = 0; i < n; i++) {
            out.put(i, out.get(i) + in.get(i));
        }
        return out;
    }
}
