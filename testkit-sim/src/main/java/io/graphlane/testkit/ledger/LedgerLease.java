package io.graphlane.testkit.ledger;

import io.graphlane.core.param.EncodedLease;
import io.graphlane.core.tensor.TensorSpec;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Objects;

/**
 * An {@link EncodedLease} over given bytes whose releases are recorded in a {@link RetentionLedger}:
 * the lease is an entry acquired when it is made, a test ties it to the completion of the
 * realization that owns it ({@code entry().heldUntil(m.completion())}), and the ledger then proves it
 * was released exactly once and never before that completion ended.
 *
 * <p>Behaves like a checkpoint lease: {@link #bytes()} is refused once released, so a backend that
 * reads after releasing (or re-reads to share a weight) fails; a second {@link #release()} is
 * recorded in the ledger first, then refused as the lease contract says. Thread-safe.
 */
public final class LedgerLease implements EncodedLease {
    private final RetentionLedger.Entry entry;
    private final TensorSpec spec;
    private final ByteBuffer bytes;

    /** A lease named {@code name} of {@code spec} over {@code bytes} (from position to limit), recorded in {@code ledger}. */
    public LedgerLease(RetentionLedger ledger, String name, TensorSpec spec, ByteBuffer bytes) {
        Objects.requireNonNull(ledger, "ledger");
        this.spec = Objects.requireNonNull(spec, "spec");
        this.bytes = bytes.slice().order(ByteOrder.LITTLE_ENDIAN);
        this.entry = ledger.acquire(Objects.requireNonNull(name, "name"));
    }

    /** A lease of {@code spec} over zeroed heap bytes of exactly its size, for tests that need no values. */
    public static LedgerLease zeros(RetentionLedger ledger, String name, TensorSpec spec) {
        return new LedgerLease(ledger, name, spec, ByteBuffer.allocate(Math.toIntExact(spec.byteSize())));
    }

    /** The ledger entry that records this lease's releases. */
    public RetentionLedger.Entry entry() {
        return entry;
    }

    /** How many times {@link #release()} was called, the wrong ones included. */
    public int releaseCount() {
        return entry.releaseCount();
    }

    @Override
    public String name() {
        return entry.name();
    }

    @Override
    public TensorSpec spec() {
        return spec;
    }

    /**
     * A read-only little-endian view of the leased bytes.
     *
     * @throws IllegalStateException naming the lease if it was already released
     */
    @Override
    public ByteBuffer bytes() {
        if (isReleased()) {
            throw new IllegalStateException("lease " + name() + " was already released; its bytes may not be read any more");
        }
        return bytes.asReadOnlyBuffer().order(ByteOrder.LITTLE_ENDIAN);
    }

    @Override
    public boolean isReleased() {
        return entry.releaseCount() > 0;
    }

    /**
     * Records a release in the ledger.
     *
     * @throws IllegalStateException naming the lease if it had been released before (the release is still recorded)
     */
    @Override
    public void release() {
        entry.close();
        int count = entry.releaseCount();
        if (count > 1) {
            throw new IllegalStateException("lease " + name() + " was released " + count + " times");
        }
    }

    @Override
    public String toString() {
        return "LedgerLease(" + name() + ", " + spec + ", released " + releaseCount() + "x)";
    }
}
