package io.graphlane.backend.cpu.collective;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.graphlane.backend.cpu.nn.CpuNeuralOps;
import io.graphlane.backend.cpu.nn.CpuTensor;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Function;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * What a member tells its transport and reports about its own time, over a transport that copies (as one across nodes):
 * every received chunk is handed back once, in arrival order per sender, after it was read; every exchange waits for
 * its chunks to be written; a failed collective withdraws what it sent; and the time per phase lands in the phase that
 * did the work (an all-reduce folds, an all-gather only copies).
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class CpuCollectiveMemberPhasesTest {
    private static final int MEMBERS = 3;
    private static final int CHUNK = 5;
    private final CpuNeuralOps ops = new CpuNeuralOps();

    /** A copying transport that records what its members tell it. */
    private static final class Recording implements CollectiveTransport {
        final InProcessTransport inner = InProcessTransport.copying(MEMBERS);
        /** Per (receiver, sender): the chunks delivered and not yet handed back, oldest first. */
        final ConcurrentHashMap<Integer, List<CollectiveMessage.Chunk>> held = new ConcurrentHashMap<>();
        final AtomicInteger handedBack = new AtomicInteger();
        final AtomicInteger outOfOrder = new AtomicInteger();
        final AtomicInteger awaited = new AtomicInteger();
        final AtomicInteger withdrawn = new AtomicInteger();

        @Override
        public int size() {
            return MEMBERS;
        }

        @Override
        public void send(int from, int to, CollectiveMessage message) {
            inner.send(from, to, message);
        }

        @Override
        public Envelope poll(int to, long timeoutNanos) throws InterruptedException {
            Envelope e = inner.poll(to, timeoutNanos);
            if (e != null && e.message() instanceof CollectiveMessage.Chunk c) {
                held.computeIfAbsent(to * MEMBERS + e.from(), k -> new ArrayList<>()).add(c);
            }
            return e;
        }

        @Override
        public void consumed(int to, int from, CollectiveMessage.Chunk chunk) {
            List<CollectiveMessage.Chunk> mine = held.get(to * MEMBERS + from);
            if (mine == null || mine.isEmpty() || mine.get(0) != chunk) {
                outOfOrder.incrementAndGet();
            } else {
                mine.remove(0);
            }
            handedBack.incrementAndGet();
        }

        @Override
        public boolean awaitSent(int from, long timeoutNanos) {
            awaited.incrementAndGet();
            return true;
        }

        @Override
        public void withdrawSent(int from) {
            withdrawn.incrementAndGet();
        }
    }

    private <R> List<R> onEveryMember(Recording transport, List<CpuCollectiveMember> members, Function<CpuCollectiveMember, R> work)
            throws Exception {
        List<CompletableFuture<R>> runs = new ArrayList<>();
        for (CpuCollectiveMember m : members) {
            runs.add(CompletableFuture.supplyAsync(() -> work.apply(m), r -> new Thread(r, "member-" + m.rank()).start()));
        }
        List<R> results = new ArrayList<>();
        for (CompletableFuture<R> run : runs) {
            results.add(run.get(30, TimeUnit.SECONDS));
        }
        return results;
    }

    @Test
    void chunksAreHandedBackInOrderAndTimeLandsInItsPhase() throws Exception {
        Recording transport = new Recording();
        CollectiveSettings settings = new CollectiveSettings(Duration.ofSeconds(20), CHUNK);
        List<CpuCollectiveMember> members = new ArrayList<>();
        for (int r = 0; r < MEMBERS; r++) {
            members.add(CpuCollectiveMember.over("phases", r, transport, settings));
        }
        int floats = 1000;
        List<CpuTensor> tensors = new ArrayList<>();
        for (int r = 0; r < MEMBERS; r++) {
            float[] values = new float[floats];
            for (int i = 0; i < floats; i++) {
                values[i] = r * 10_000 + i;
            }
            tensors.add(ops.fromHost(values, 10, 100));
        }
        try {
            onEveryMember(transport, members, m -> {
                m.allReduceInPlace(tensors.get(m.rank()), ReduceOp.SUM);
                return null;
            });
            for (int r = 0; r < MEMBERS; r++) {
                for (int i = 0; i < floats; i++) {
                    assertEquals(3 * i + 30_000f, tensors.get(r).data().get(i), "member " + r + " float " + i);
                }
            }
            // A ring all-reduce receives 2 (n-1) segments of about floats / n, in chunks of CHUNK floats, on every member.
            long chunks = 0;
            long[] bounds = CpuCollectiveMember.balanced(floats, MEMBERS);
            for (int s = 0; s < MEMBERS; s++) {
                chunks += 2L * (MEMBERS - 1) * ((bounds[s + 1] - bounds[s] + CHUNK - 1) / CHUNK);
            }
            assertEquals(chunks, transport.handedBack.get(), "every received chunk handed back once");
            assertEquals(0, transport.outOfOrder.get(), "handed back in arrival order per sender");
            assertEquals(MEMBERS * 2 * (MEMBERS - 1), transport.awaited.get(), "each exchange waits for its chunks to be written");
            List<CollectivePhases> afterReduce = new ArrayList<>();
            for (CpuCollectiveMember m : members) {
                CollectivePhases p = m.phases();
                assertTrue(p.sendNanos() > 0 && p.reduceNanos() > 0 && p.receiveNanos() > 0 && p.waitNanos() >= 0, p.toString());
                afterReduce.add(p);
            }
            List<CpuTensor> gathered = onEveryMember(transport, members, m -> m.allGather(tensors.get(m.rank())));
            gathered.forEach(ops::release);
            for (CpuCollectiveMember m : members) {
                CollectivePhases spent = m.phases().minus(afterReduce.get(m.rank()));
                assertEquals(0, spent.reduceNanos(), "an all-gather folds nothing");
                assertTrue(spent.receiveNanos() > 0 && spent.sendNanos() > 0, spent.toString());
            }
            assertEquals(0, transport.withdrawn.get(), "nothing withdrawn while every collective succeeds");
            // A member whose send counts do not cover its tensor fails; it withdraws what it may have sent.
            CpuCollectiveMember first = members.get(0);
            try {
                first.allToAll(tensors.get(0), new int[] {1, 1, 1});
            } catch (IllegalArgumentException expected) {
                // The counts are refused before anything moves.
            }
            assertEquals(1, transport.withdrawn.get(), "the failed collective withdrew its chunks");
        } finally {
            tensors.forEach(ops::release);
        }
    }
}
