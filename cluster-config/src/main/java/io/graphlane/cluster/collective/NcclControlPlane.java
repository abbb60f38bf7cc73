package io.graphlane.cluster.collective;

import io.graphlane.backend.cpu.collective.CollectiveSettings;
import io.graphlane.backend.cpu.collective.CpuCollectiveMember;
import io.graphlane.backend.cpu.nn.CpuNeuralOps;
import io.graphlane.backend.cpu.nn.CpuTensor;
import io.graphlane.backend.gpu.GpuBackend;
import io.graphlane.backend.gpu.nccl.CollectiveDescriptor;
import io.graphlane.backend.gpu.nccl.CollectiveMismatchException;
import io.graphlane.backend.gpu.nccl.DescriptorConsensus;
import io.graphlane.backend.gpu.nccl.NcclCommunicator;
import io.graphlane.backend.gpu.nccl.NcclUniqueIds;
import java.nio.FloatBuffer;
import java.util.Objects;
import java.util.concurrent.CompletionStage;
import java.util.function.Supplier;
import org.apache.pekko.actor.typed.ActorSystem;

/**
 * NCCL's control plane for a group of GPU ranks: the exchange that must happen before and around NCCL's own traffic,
 * carried by a CPU collective group ({@link CpuCollectiveMember}) — across nodes, the group's rank actors and payload
 * plane over the cluster ({@link #join}); in one JVM, any transport ({@link #over}).
 * <ul>
 *   <li>{@link #shareUniqueId}: rank 0 creates the {@code ncclUniqueId} and every rank receives its 128 bytes (an
 *       all-gather in which only rank 0 contributes a row), so every rank's {@code ncclCommInitRank} uses the same id.
 *       If rank 0 cannot create it, rank 0 leaves the group with that error and every other rank fails at once,
 *       naming rank 0, rather than waiting for NCCL.</li>
 *   <li>{@link #consensus()}: the {@link DescriptorConsensus} each {@link NcclCommunicator} runs before every
 *       collective: every rank's descriptor is gathered by every rank, so all of them return, or all throw the same
 *       {@link CollectiveMismatchException} naming the lowest rank whose descriptor differs from rank 0's. A rank that
 *       is absent or lost fails it on the others within the CPU group's member timeout or loss detection.</li>
 * </ul>
 * Both block the calling thread until every rank took part: call them from a lane's worker or another thread of the
 * caller's own, never from an actor. Like the member it wraps, a control plane serves one thread at a time; its ranks
 * must call the same sequence of operations (a rank calling {@code shareUniqueId} while another agrees on a
 * descriptor fails both with the CPU group's descriptor mismatch).
 */
public final class NcclControlPlane implements AutoCloseable {
    /** The longest operation or dtype name a descriptor carries. */
    static final int NAME_CHARS = 32;
    /** Floats of one encoded descriptor: sequence (4 × 16 bits), rows and cols (2 × 16 bits each), two names. */
    static final int DESCRIPTOR_FLOATS = 4 + 2 + 2 + 2 * (1 + NAME_CHARS);
    private static final CpuNeuralOps OPS = new CpuNeuralOps();

    private final CpuCollectiveMember member;
    private final ClusterCollectiveTransport transport;

    private NcclControlPlane(CpuCollectiveMember member, ClusterCollectiveTransport transport) {
        this.member = Objects.requireNonNull(member, "member");
        this.transport = transport;
    }

    /** The control plane over an existing CPU collective member; closing it leaves the member's transport to its owner. */
    public static NcclControlPlane over(CpuCollectiveMember member) {
        return new NcclControlPlane(member, null);
    }

    /**
     * Joins rank {@code rank} of the {@code size}-rank NCCL group {@code group} on the node of {@code system}: a CPU
     * collective group named {@code nccl-<group>} over the cluster ({@link ClusterCollectives#join}), which this
     * control plane owns and closes.
     *
     * @return completes once every rank has joined; fails like {@link ClusterCollectives#join}
     */
    public static CompletionStage<NcclControlPlane> join(ActorSystem<?> system, String group, int rank, int size,
                                                         CollectiveSettings settings) {
        String name = "nccl-" + Objects.requireNonNull(group, "group");
        return ClusterCollectives.join(system, name, rank, size, settings)
                .thenApply(t -> new NcclControlPlane(CpuCollectiveMember.over(name, rank, t, settings), t));
    }

    /** This rank. */
    public int rank() {
        return member.rank();
    }

    /** The number of ranks. */
    public int size() {
        return member.size();
    }

    /**
     * The group's {@code ncclUniqueId}: created by {@code generate} on rank 0 only, received by every other rank.
     *
     * @throws RuntimeException on rank 0, what {@code generate} threw (the others are told rank 0 left); on the others,
     *         the CPU group's {@link io.graphlane.backend.cpu.collective.CollectiveException} naming the rank at fault
     */
    public byte[] shareUniqueId(Supplier<byte[]> generate) {
        Objects.requireNonNull(generate, "generate");
        CpuTensor mine;
        if (member.rank() == 0) {
            byte[] id;
            try {
                id = generate.get();
                if (id == null || id.length != NcclUniqueIds.BYTES) {
                    throw new IllegalStateException("an ncclUniqueId is " + NcclUniqueIds.BYTES + " bytes, rank 0 created "
                            + (id == null ? "none" : id.length + " bytes"));
                }
            } catch (RuntimeException | Error e) {
                member.leave(e);
                throw e;
            }
            mine = OPS.allocateUninitialized(1, NcclUniqueIds.BYTES);
            FloatBuffer data = mine.data();
            for (int i = 0; i < id.length; i++) {
                data.put(i, id[i] & 0xFF);
            }
        } else {
            mine = OPS.allocateUninitialized(0, NcclUniqueIds.BYTES);
        }
        CpuTensor all = gather(mine);
        try {
            if (all.rows() != 1) {
                throw new IllegalStateException("sharing the ncclUniqueId: expected one row, from rank 0, got " + all.rows());
            }
            byte[] id = new byte[NcclUniqueIds.BYTES];
            FloatBuffer data = all.data();
            for (int i = 0; i < id.length; i++) {
                id[i] = (byte) (int) data.get(i);
            }
            return id;
        } finally {
            OPS.release(all);
        }
    }

    /** The consensus to hand to {@link NcclCommunicator#create}; see {@link #agree}. */
    public DescriptorConsensus consensus() {
        return this::agree;
    }

    /**
     * Returns once every rank proposed a descriptor equal to {@code mine}.
     *
     * @throws CollectiveMismatchException on every rank, naming the lowest rank whose descriptor differs from rank 0's
     * @throws IllegalArgumentException if {@code rank} is not this control plane's rank, or a name is longer than
     *         {@value #NAME_CHARS} characters (the other ranks are told this one left)
     */
    public void agree(int rank, CollectiveDescriptor mine) {
        Objects.requireNonNull(mine, "descriptor");
        if (rank != member.rank()) {
            throw new IllegalArgumentException("NCCL consensus: this control plane is rank " + member.rank() + ", asked to agree as rank " + rank);
        }
        CpuTensor encoded = OPS.allocateUninitialized(1, DESCRIPTOR_FLOATS);
        try {
            encode(mine, encoded.data());
        } catch (IllegalArgumentException e) {
            OPS.release(encoded);
            member.leave(e);
            throw e;
        }
        CpuTensor all = gather(encoded);
        try {
            CollectiveDescriptor reference = decode(all.data(), 0);
            for (int r = 1; r < all.rows(); r++) {
                CollectiveDescriptor found = decode(all.data(), r * DESCRIPTOR_FLOATS);
                if (!found.equals(reference)) {
                    throw new CollectiveMismatchException(r, reference, found);
                }
            }
        } finally {
            OPS.release(all);
        }
    }

    /**
     * Joins the group's NCCL communicator on {@code device}: shares the id ({@link NcclUniqueIds#generate} on rank 0)
     * and creates the communicator with this control plane's consensus. Close the communicator before this plane.
     *
     * @throws io.graphlane.backend.gpu.GpuUnavailableException if libnccl.so.2 or CUDA does not load
     */
    public NcclCommunicator communicator(GpuBackend device) {
        Objects.requireNonNull(device, "device");
        byte[] id = shareUniqueId(NcclUniqueIds::generate);
        return NcclCommunicator.create(device, id, member.size(), member.rank(), consensus());
    }

    /** Closes the group's transport if this control plane joined it ({@link #join}); otherwise does nothing. */
    @Override
    public void close() {
        if (transport != null) {
            transport.close();
        }
    }

    /** All-gathers {@code mine} (released here) and returns the rows of every rank, which the caller releases. */
    private CpuTensor gather(CpuTensor mine) {
        try {
            return member.allGather(mine);
        } finally {
            OPS.release(mine);
        }
    }

    static void encode(CollectiveDescriptor d, FloatBuffer out) {
        int at = 0;
        for (int shift = 48; shift >= 0; shift -= 16) {
            out.put(at++, (d.sequence() >>> shift) & 0xFFFF);
        }
        for (int value : new int[] {d.rows(), d.cols()}) {
            out.put(at++, (value >>> 16) & 0xFFFF);
            out.put(at++, value & 0xFFFF);
        }
        at = encodeName("operation", d.operation(), out, at);
        encodeName("dtype", d.dtype(), out, at);
    }

    private static int encodeName(String field, String name, FloatBuffer out, int at) {
        if (name.length() > NAME_CHARS) {
            throw new IllegalArgumentException("NCCL consensus: the descriptor's " + field + " '" + name + "' is " + name.length()
                    + " characters, at most " + NAME_CHARS + " travel");
        }
        out.put(at++, name.length());
        for (int i = 0; i < NAME_CHARS; i++) {
            out.put(at++, i < name.length() ? name.charAt(i) : 0);
        }
        return at;
    }

    static CollectiveDescriptor decode(FloatBuffer in, int at) {
        long sequence = 0;
        for (int i = 0; i < 4; i++) {
            sequence = (sequence << 16) | (long) in.get(at++);
        }
        int rows = ((int) in.get(at++) << 16) | (int) in.get(at++);
        int cols = ((int) in.get(at++) << 16) | (int) in.get(at++);
        String operation = decodeName(in, at);
        String dtype = decodeName(in, at + 1 + NAME_CHARS);
        return new CollectiveDescriptor(sequence, operation, dtype, rows, cols);
    }

    private static String decodeName(FloatBuffer in, int at) {
        int length = (int) in.get(at);
        char[] chars = new char[length];
        for (int i = 0; i < length; i++) {
            chars[i] = (char) (int) in.get(at + 1 + i);
        }
        return new String(chars);
    }
}
