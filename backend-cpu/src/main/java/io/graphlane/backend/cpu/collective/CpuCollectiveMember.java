package io.graphlane.backend.cpu.collective;

import io.graphlane.backend.cpu.nn.CpuNeuralOps;
import io.graphlane.backend.cpu.nn.CpuTensor;
import io.graphlane.core.backend.AbsentCapabilityException;
import java.nio.FloatBuffer;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;

/**
 * One member of a {@link CpuCollectiveGroup}: its collectives run synchronously on the calling
 * thread, which is the member's lane worker (the device side), never an actor thread. Each
 * collective first exchanges descriptors with every other member and checks them against member
 * 0's; only then does payload move, as chunks: all-reduce as a ring reduce-scatter followed by a
 * ring all-gather, all-gather as a ring, all-to-all as pairwise exchanges.
 *
 * <p>Failure is never a hang: a member that sends nothing for the group's timeout is named as
 * absent; a member that fails tells every other member, which fail naming it; after any failure
 * this member refuses further collectives ({@link CollectiveGroupPoisonedException}) because the
 * group's order can no longer be proven. Tensors handed in are read, never freed; tensors handed
 * out belong to the caller (free them with {@link CpuNeuralOps#release}); they are allocated without
 * zero-filling, because every collective writes each of their floats before returning them.
 */
public final class CpuCollectiveMember {
    /** Allocation only (it keeps no scratch for that), shared by every member. */
    private static final CpuNeuralOps ALLOCATOR = new CpuNeuralOps();
    /** Floats per block of a reduction: two blocks stay in the core's L1/L2 cache. */
    private static final int SCRATCH_FLOATS = 4096;
    /**
     * Over a transport that copies, how many chunks an exchange sends ahead of the one it waits for:
     * the link then carries a stream of chunks instead of one chunk per round trip. The transport's
     * own flow control bounds what is actually in flight.
     */
    static final int SEND_AHEAD = 8;

    private final String group;
    private final int rank;
    private final int size;
    private final CollectiveTransport transport;
    private final long timeoutNanos;
    private final Duration timeout;
    private final int chunkFloats;
    private final boolean byReference;
    private final List<ArrayDeque<CollectiveMessage>> pending;
    private final List<ArrayDeque<CollectiveMessage>> answers;
    /** Chunks lent to other members and not yet answered for, oldest first. */
    private final List<ChunkLoan> lent = new ArrayList<>();
    private final float[] scratchMine = new float[SCRATCH_FLOATS];
    private final float[] scratchIncoming = new float[SCRATCH_FLOATS];
    private long nextSequence;
    private CollectiveException poisoned;
    private long sendNanos;
    private long receiveNanos;
    private long reduceNanos;
    private long waitNanos;

    CpuCollectiveMember(String group, int rank, CollectiveTransport transport, CollectiveSettings settings) {
        this.group = group;
        this.rank = rank;
        this.size = transport.size();
        this.transport = transport;
        this.timeout = settings.memberTimeout();
        this.timeoutNanos = settings.memberTimeout().toNanos();
        this.chunkFloats = settings.chunkFloats();
        this.byReference = transport.sharesMemory();
        this.pending = new ArrayList<>(size);
        this.answers = new ArrayList<>(size);
        for (int i = 0; i < size; i++) {
            pending.add(new ArrayDeque<>());
            answers.add(new ArrayDeque<>());
        }
    }

    /**
     * Member {@code rank} of group {@code group} over {@code transport}: how one member is made where each
     * member has its own transport endpoint (across nodes, one per node). Its collectives are synchronous
     * and run on the calling thread, which must be the member's lane worker; every member of the group
     * must be made with the same group name and settings.
     *
     * @throws IllegalArgumentException if {@code rank} is not in {@code [0, transport.size())}
     */
    public static CpuCollectiveMember over(String group, int rank, CollectiveTransport transport, CollectiveSettings settings) {
        Objects.requireNonNull(group, "group");
        Objects.requireNonNull(transport, "transport");
        Objects.requireNonNull(settings, "settings");
        if (rank < 0 || rank >= transport.size()) {
            throw new IllegalArgumentException("collective group " + group + ": rank must be in [0, " + transport.size() + "), got " + rank);
        }
        return new CpuCollectiveMember(group, rank, transport, settings);
    }

    /** This member's rank in its group. */
    public int rank() {
        return rank;
    }

    /** The number of members of the group. */
    public int size() {
        return size;
    }

    /** Collectives this member has entered (the next one's sequence number). */
    public synchronized long sequence() {
        return nextSequence;
    }

    /**
     * Reduces {@code tensor} element-wise with every member's tensor of the same shape, in place:
     * when it returns, every member's tensor holds the same result.
     *
     * @throws AbsentCapabilityException if the CPU does not compute {@code op}; nothing was exchanged
     * @throws CollectiveException       naming the member at fault if the members disagree, one is absent or one left
     */
    public synchronized void allReduceInPlace(CpuTensor tensor, ReduceOp op) {
        Objects.requireNonNull(tensor, "tensor");
        requireSupported(op);
        reduceInto(tensor, tensor, op);
    }

    /**
     * Like {@link #allReduceInPlace} into a new tensor owned by the caller; {@code value} is left as it
     * was. The reduction reads {@code value} and writes the result straight into the new tensor, so
     * {@code value} is never copied first.
     */
    public synchronized CpuTensor allReduce(CpuTensor value, ReduceOp op) {
        Objects.requireNonNull(value, "value");
        requireSupported(op);
        CpuTensor out = ALLOCATOR.allocateUninitialized(value.rows(), value.cols());
        try {
            reduceInto(value, out, op);
            return out;
        } catch (RuntimeException | Error e) {
            release(out);
            throw e;
        }
    }

    /**
     * The all-reduce of {@code in} into {@code out} (the same tensor, or one of the same shape whose
     * contents do not matter): a ring reduce-scatter whose every fold reads this member's own value from
     * {@code in} and writes {@code out} (each segment is folded into exactly once), then a ring all-gather.
     */
    private void reduceInto(CpuTensor in, CpuTensor out, ReduceOp op) {
        CollectiveDescriptor mine = descriptor(CollectiveKind.ALL_REDUCE, op, in.rows(), in.cols(), null);
        run(mine, null, all -> {
            FloatBuffer source = in.data();
            FloatBuffer buf = out.data();
            long total = (long) in.rows() * in.cols();
            if (size == 1) {
                if (source != buf) {
                    buf.put(0, source, 0, (int) total);
                }
                return null;
            }
            long[] bounds = balanced(total, size);
            ring(source, buf, bounds, rank, op, mine.sequence(), "reduce-scatter chunk");
            ring(buf, buf, bounds, rank + 1, null, mine.sequence(), "all-gather chunk");
            return null;
        });
    }

    /**
     * Concatenates every member's rows in member order into a new tensor owned by the caller; members
     * may hold different numbers of rows (zero included) but the same number of columns.
     *
     * @throws CollectiveException naming the member at fault if the members disagree, one is absent or one left
     */
    public synchronized CpuTensor allGather(CpuTensor value) {
        Objects.requireNonNull(value, "value");
        CollectiveDescriptor mine = descriptor(CollectiveKind.ALL_GATHER, null, value.rows(), value.cols(), null);
        return run(mine, null, all -> {
            int cols = value.cols();
            long[] bounds = new long[size + 1];
            long rows = 0;
            for (int i = 0; i < size; i++) {
                bounds[i + 1] = bounds[i] + (long) all[i].rows() * cols;
                rows += all[i].rows();
            }
            CpuTensor out = ALLOCATOR.allocateUninitialized(Math.toIntExact(rows), cols);
            try {
                FloatBuffer buf = out.data();
                buf.put((int) bounds[rank], value.data(), 0, value.rows() * cols);
                ring(buf, buf, bounds, rank, null, mine.sequence(), "all-gather chunk");
                return out;
            } catch (RuntimeException | Error e) {
                release(out);
                throw e;
            }
        });
    }

    /**
     * Sends the next {@code sendCounts[j]} rows of {@code value} to member j (in member order) and
     * returns a new tensor, owned by the caller, of the rows every member sent here, in member order.
     * A member with no rows at all (every count zero) still takes part.
     *
     * @throws IllegalArgumentException if the counts do not cover {@code value}'s rows; the others are told this member left
     * @throws CollectiveException      naming the member at fault if the members disagree, one is absent or one left
     */
    public synchronized CpuTensor allToAll(CpuTensor value, int[] sendCounts) {
        Objects.requireNonNull(value, "value");
        Objects.requireNonNull(sendCounts, "sendCounts");
        int[] counts = sendCounts.clone();
        CollectiveDescriptor mine = descriptor(CollectiveKind.ALL_TO_ALL, null, value.rows(), value.cols(), counts);
        return run(mine, () -> requireCountsCover(counts, value.rows()), all -> {
            int cols = value.cols();
            // Where member i's block for member j starts in i's tensor, and where it lands in j's result.
            int[] received = new int[size + 1];
            for (int i = 0; i < size; i++) {
                received[i + 1] = received[i] + all[i].sendCount(rank);
            }
            CpuTensor out = ALLOCATOR.allocateUninitialized(received[size], cols);
            try {
                FloatBuffer src = value.data();
                FloatBuffer dst = out.data();
                int[] sendStart = new int[size + 1];
                for (int j = 0; j < size; j++) {
                    sendStart[j + 1] = sendStart[j] + counts[j];
                }
                dst.put(received[rank] * cols, src, sendStart[rank] * cols, counts[rank] * cols);
                for (int k = 1; k < size; k++) {
                    int to = (rank + k) % size;
                    int from = (rank - k + size) % size;
                    int landsAt = 0;
                    for (int i = 0; i < rank; i++) {
                        landsAt += all[i].sendCount(to);
                    }
                    exchange(src, (long) sendStart[to] * cols, (long) counts[to] * cols, to, (long) landsAt * cols,
                            dst, (long) received[from] * cols, (long) all[from].sendCount(rank) * cols, from, null, null,
                            mine.sequence(), "all-to-all block");
                }
                return out;
            } catch (RuntimeException | Error e) {
                release(out);
                throw e;
            }
        });
    }

    /**
     * Leaves the group for {@code cause}: every other member's current or next collective fails naming
     * this member, and this member refuses further collectives.
     */
    public synchronized void leave(Throwable cause) {
        String reason = "member " + rank + " left: " + cause;
        CollectiveException lost = new MemberLostException(group, nextSequence, rank, reason);
        if (poisoned == null) {
            poisoned = lost;
            tellOthers(new CollectiveMessage.Left(rank, reason));
        }
    }

    /** Where this member's collectives have spent their time so far (see {@link CollectivePhases}). */
    public synchronized CollectivePhases phases() {
        return new CollectivePhases(sendNanos, receiveNanos, reduceNanos, waitNanos);
    }

    /** The failure that poisoned this member, or {@code null} while it is healthy. */
    public synchronized CollectiveException poisonedBy() {
        return poisoned;
    }

    // ------------------------------------------------------------------ protocol

    @FunctionalInterface
    private interface Payload<R> {
        R move(CollectiveDescriptor[] all) throws InterruptedException;
    }

    private CollectiveDescriptor descriptor(CollectiveKind kind, ReduceOp op, int rows, int cols, int[] counts) {
        if (poisoned != null) {
            throw new CollectiveGroupPoisonedException(group, nextSequence, rank, poisoned);
        }
        return new CollectiveDescriptor(nextSequence, kind, op, "F32", rows, cols, counts);
    }

    /** The local {@code check} (its failure tells the others), consensus, then the payload; nothing stays lent when it fails. */
    private <R> R attempt(CollectiveDescriptor mine, Runnable check, Payload<R> payload) throws InterruptedException {
        try {
            if (check != null) {
                check.run();
            }
            CollectiveDescriptor[] all = agree(mine);
            return payload.move(all);
        } catch (RuntimeException | Error | InterruptedException e) {
            withdrawLoans();
            throw e;
        }
    }

    /** Runs one collective and turns its failure into this member's poisoning and the others' notice. */
    private <R> R run(CollectiveDescriptor mine, Runnable check, Payload<R> payload) {
        nextSequence++;
        try {
            return attempt(mine, check, payload);
        } catch (DescriptorMismatchException e) {
            // Every member reached the same verdict from the same descriptors: nobody needs telling.
            poisoned = e;
            throw e;
        } catch (MemberLostException e) {
            // The member that left told everyone already.
            poisoned = e;
            throw e;
        } catch (CollectiveException e) {
            poisoned = e;
            tellOthers(new CollectiveMessage.Left(e.member(), e.getMessage()));
            throw e;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw fail(mine, new MemberLostException(group, mine.sequence(), rank, "member " + rank + "'s lane was interrupted"), e);
        } catch (RuntimeException | Error e) {
            throw fail(mine, new MemberLostException(group, mine.sequence(), rank, "member " + rank + " failed: " + e), e);
        }
    }

    private RuntimeException fail(CollectiveDescriptor mine, CollectiveException lost, Throwable cause) {
        poisoned = lost;
        tellOthers(new CollectiveMessage.Left(rank, lost.getMessage()));
        if (cause instanceof Error error) {
            throw error;
        }
        return cause instanceof RuntimeException r && !(r instanceof CollectiveException) ? r : lost;
    }

    /** Descriptor consensus: everyone sends theirs to everyone; everyone compares all of them against member 0's. */
    private CollectiveDescriptor[] agree(CollectiveDescriptor mine) throws InterruptedException {
        CollectiveDescriptor[] all = new CollectiveDescriptor[size];
        all[rank] = mine;
        tellOthers(new CollectiveMessage.Descriptor(mine));
        long deadline = System.nanoTime() + timeoutNanos;
        for (int r = 0; r < size; r++) {
            if (r == rank) {
                continue;
            }
            CollectiveMessage m = receive(r, mine.sequence(), "descriptor", deadline);
            if (!(m instanceof CollectiveMessage.Descriptor d)) {
                throw new CollectiveException(group, mine.sequence(), r, "collective group " + group + ": member " + r
                        + " sent payload before its descriptor for collective #" + mine.sequence() + " (protocol violation)");
            }
            all[r] = d.descriptor();
        }
        for (int r = 1; r < size; r++) {
            String difference = all[r].differenceFrom(all[0]);
            if (difference != null) {
                throw new DescriptorMismatchException(group, r, all[0], all[r], difference);
            }
        }
        return all;
    }

    /**
     * A ring pass over the segments {@code [bounds[i], bounds[i+1])} of {@code buf}: in step s this
     * member sends segment {@code start − s} to the next member and receives segment
     * {@code start − s − 1} from the previous one, writing it into {@code buf} folded with {@code op}
     * into this member's own value of it from {@code in} (or copying it when {@code op} is null). The
     * first step sends from {@code in}, later ones what earlier steps wrote into {@code buf}.
     */
    private void ring(FloatBuffer in, FloatBuffer buf, long[] bounds, int start, ReduceOp op, long sequence, String phase)
            throws InterruptedException {
        int right = (rank + 1) % size;
        int left = (rank - 1 + size) % size;
        for (int s = 0; s < size - 1; s++) {
            int send = Math.floorMod(start - s, size);
            int recv = Math.floorMod(start - s - 1, size);
            exchange(s == 0 ? in : buf, bounds[send], bounds[send + 1] - bounds[send], right, bounds[send],
                    buf, bounds[recv], bounds[recv + 1] - bounds[recv], left, op, in, sequence, phase);
        }
    }

    /**
     * Streams {@code sendLength} floats of {@code src} from {@code sendOffset} to member {@code to}
     * (landing at {@code landsAt} in its buffer) while receiving {@code recvLength} floats from member
     * {@code from} into {@code dst} at {@code recvOffset}, chunk by chunk, interleaved. With a reduction,
     * {@code dst} receives the received floats folded with {@code mine}'s at the same place (either may
     * be {@code dst} itself); without, they are copied.
     *
     * <p>Over a transport that copies, sends run up to {@link #SEND_AHEAD} chunks ahead of the receive
     * this waits for (a send never reads what this exchange receives); received chunks are folded or copied straight
     * from the transport's buffer and handed back, and the exchange returns only once the transport has written its
     * chunks ({@link CollectiveTransport#awaitSent}), since it may write them from {@code src} itself.
     *
     * <p>Over a transport that shares memory each side is one chunk lent by reference: the receiver
     * folds or copies straight from the sender's storage and answers {@link CollectiveMessage.Consumed},
     * and this returns only once its own chunk was answered for, so the storage may change afterwards.
     */
    private void exchange(FloatBuffer src, long sendOffset, long sendLength, int to, long landsAt,
                          FloatBuffer dst, long recvOffset, long recvLength, int from, ReduceOp op, FloatBuffer mine,
                          long sequence, String phase) throws InterruptedException {
        long step = byReference ? Integer.MAX_VALUE : chunkFloats;
        long sendChunks = (sendLength + step - 1) / step;
        long recvChunks = (recvLength + step - 1) / step;
        long ahead = byReference ? 0 : SEND_AHEAD;
        long sent = 0;
        for (long c = 0; c < Math.max(sendChunks, recvChunks); c++) {
            // The sends never depend on this exchange's receives, so they may run ahead of them.
            for (; sent < sendChunks && sent <= c + ahead; sent++) {
                int at = (int) (sendOffset + sent * step);
                int length = (int) Math.min(step, sendOffset + sendLength - at);
                ChunkLoan loan = byReference ? new ChunkLoan() : null;
                if (loan != null) {
                    lent.add(loan);
                }
                long t0 = System.nanoTime();
                transport.send(rank, to, new CollectiveMessage.Chunk(sequence, landsAt + sent * step, src.slice(at, length).asReadOnlyBuffer(), loan));
                sendNanos += System.nanoTime() - t0;
            }
            if (c < recvChunks) {
                long expectedAt = recvOffset + c * step;
                int length = (int) Math.min(step, recvOffset + recvLength - expectedAt);
                CollectiveMessage m = receive(from, sequence, phase, System.nanoTime() + timeoutNanos);
                if (!(m instanceof CollectiveMessage.Chunk chunk) || chunk.sequence() != sequence || chunk.offset() != expectedAt
                        || chunk.values().remaining() != length) {
                    throw new CollectiveException(group, sequence, from, "collective group " + group + ": member " + from + " sent " + m
                            + " where member " + rank + " expected " + length + " floats at " + expectedAt + " of collective #" + sequence
                            + " (protocol violation)");
                }
                consume(chunk, from, dst, (int) expectedAt, length, op, mine);
            }
        }
        if (!byReference && sendChunks > 0) {
            // The chunks may be written straight from src: the next exchange may change it.
            long t0 = System.nanoTime();
            boolean written = transport.awaitSent(rank, timeoutNanos);
            waitNanos += System.nanoTime() - t0;
            if (!written) {
                throw new MemberAbsentException(group, sequence, to, rank, phase + " (taking member " + rank + "'s chunks)", timeout);
            }
        }
        for (long c = 0; byReference && c < sendChunks; c++) {
            long at = landsAt + c * step;
            CollectiveMessage m = receiveAnswer(to, sequence, phase, System.nanoTime() + timeoutNanos);
            if (!(m instanceof CollectiveMessage.Consumed consumed) || consumed.sequence() != sequence || consumed.offset() != at) {
                throw new CollectiveException(group, sequence, to, "collective group " + group + ": member " + to + " answered " + m
                        + " where member " + rank + " expected it to have consumed the chunk at " + at + " of collective #" + sequence
                        + " (protocol violation)");
            }
            lent.remove(0);
        }
    }

    /**
     * Folds or copies one received chunk into {@code dst} at {@code at}, straight from the chunk's values (over a
     * transport across nodes, the buffer its socket was read into); a lent chunk is read inside its loan and answered, any
     * other handed back to the transport once read.
     */
    private void consume(CollectiveMessage.Chunk chunk, int from, FloatBuffer dst, int at, int length, ReduceOp op, FloatBuffer mine)
            throws InterruptedException {
        ChunkLoan loan = chunk.loan();
        if (loan != null && !loan.beginRead()) {
            throw withdrawn(chunk, from);
        }
        long t0 = System.nanoTime();
        try {
            if (op == null) {
                dst.put(at, chunk.values(), 0, length);
            } else {
                op.combine(dst, at, mine, at, chunk.values(), 0, length, scratchMine, scratchIncoming);
            }
        } finally {
            if (loan != null) {
                loan.endRead();
            }
        }
        long spent = System.nanoTime() - t0;
        if (op == null) {
            receiveNanos += spent;
        } else {
            reduceNanos += spent;
        }
        if (loan != null) {
            transport.send(rank, from, new CollectiveMessage.Consumed(chunk.sequence(), chunk.offset()));
        } else {
            transport.consumed(rank, from, chunk);
        }
    }

    /**
     * The failure behind a lent chunk that {@code from} withdrew: {@code from} failed, and it (or the
     * member at the root of its failure) tells everyone why, so this waits for that notice and names
     * its member; without one in time, {@code from} itself.
     */
    private MemberLostException withdrawn(CollectiveMessage.Chunk chunk, int from) throws InterruptedException {
        long deadline = System.nanoTime() + timeoutNanos;
        while (true) {
            long left = deadline - System.nanoTime();
            CollectiveTransport.Envelope envelope = left > 0 ? transport.poll(rank, left) : null;
            if (envelope == null) {
                return new MemberLostException(group, chunk.sequence(), from, "member " + from + " withdrew its chunk at "
                        + chunk.offset() + " of collective #" + chunk.sequence() + " (it failed)");
            }
            if (envelope.message() instanceof CollectiveMessage.Left gone) {
                return new MemberLostException(group, chunk.sequence(), gone.member(), gone.reason());
            }
        }
    }

    /**
     * Makes sure nothing reads this member's storage any more: withdraws every chunk lent and not yet answered for,
     * and every chunk sent and not yet written.
     */
    private void withdrawLoans() {
        for (ChunkLoan loan : lent) {
            loan.withdraw();
        }
        lent.clear();
        if (!byReference) {
            transport.withdrawSent(rank);
        }
    }

    /** Frees {@code tensor} once nothing lent from it can be read any more. */
    private void release(CpuTensor tensor) {
        withdrawLoans();
        ALLOCATOR.release(tensor);
    }

    /** The next payload or descriptor from {@code from}, keeping other messages for later; fails on timeout or on any member leaving. */
    private CollectiveMessage receive(int from, long sequence, String phase, long deadline) throws InterruptedException {
        return next(pending.get(from), from, sequence, phase, deadline);
    }

    /** The next {@link CollectiveMessage.Consumed} answer from {@code from}; fails like {@link #receive}. */
    private CollectiveMessage receiveAnswer(int from, long sequence, String phase, long deadline) throws InterruptedException {
        return next(answers.get(from), from, sequence, phase + " answer", deadline);
    }

    private CollectiveMessage next(ArrayDeque<CollectiveMessage> queue, int from, long sequence, String phase, long deadline)
            throws InterruptedException {
        while (queue.isEmpty()) {
            long now = System.nanoTime();
            long left = deadline - now;
            CollectiveTransport.Envelope envelope = left > 0 ? transport.poll(rank, left) : null;
            waitNanos += System.nanoTime() - now;
            if (envelope == null) {
                throw new MemberAbsentException(group, sequence, from, rank, phase, timeout);
            }
            CollectiveMessage message = envelope.message();
            if (message instanceof CollectiveMessage.Left gone) {
                throw new MemberLostException(group, sequence, gone.member(), gone.reason());
            }
            (message instanceof CollectiveMessage.Consumed ? answers : pending).get(envelope.from()).add(message);
        }
        return queue.poll();
    }

    private void tellOthers(CollectiveMessage message) {
        for (int r = 0; r < size; r++) {
            if (r != rank) {
                transport.send(rank, r, message);
            }
        }
    }

    private void requireSupported(ReduceOp op) {
        Objects.requireNonNull(op, "op");
        if (!op.supportedOnCpu()) {
            throw new AbsentCapabilityException("cpu", "all-reduce with reduction " + op + " (the CPU computes SUM, MIN and MAX)");
        }
    }

    private void requireCountsCover(int[] counts, int rows) {
        if (counts.length != size) {
            throw new IllegalArgumentException("all-to-all on member " + rank + " of group " + group + ": " + counts.length
                    + " send counts, expected one per member (" + size + ")");
        }
        long sum = 0;
        for (int c : counts) {
            if (c < 0) {
                throw new IllegalArgumentException("all-to-all on member " + rank + " of group " + group + ": negative send count in "
                        + Arrays.toString(counts));
            }
            sum += c;
        }
        if (sum != rows) {
            throw new IllegalArgumentException("all-to-all on member " + rank + " of group " + group + ": send counts "
                    + Arrays.toString(counts) + " add up to " + sum + " rows, but the tensor has " + rows);
        }
    }

    /** {@code total} split into {@code parts} contiguous ranges, the first {@code total % parts} one longer, as bounds. */
    static long[] balanced(long total, int parts) {
        long[] bounds = new long[parts + 1];
        long base = total / parts;
        long extra = total % parts;
        for (int i = 0; i < parts; i++) {
            bounds[i + 1] = bounds[i] + base + (i < extra ? 1 : 0);
        }
        return bounds;
    }

    @Override
    public String toString() {
        return "member " + rank + " of " + group;
    }
}
