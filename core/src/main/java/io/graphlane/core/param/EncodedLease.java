package io.graphlane.core.param;

import io.graphlane.core.tensor.TensorSpec;
import java.nio.ByteBuffer;

/**
 * A lease on the encoded (checkpoint-format) bytes of one tensor selection. While the
 * lease is held the bytes stay mapped and readable; {@link #release()} unpins them.
 * A lease is released exactly once: a second release is an error that is reported.
 */
public interface EncodedLease {

    /** The checkpoint tensor (and selection) this lease covers, for errors and ledgers. */
    String name();

    /** The dtype and shape of the leased bytes, as encoded in the checkpoint. */
    TensorSpec spec();

    /**
     * A read-only little-endian view of the leased bytes, valid until release. May be a view
     * of a memory-mapped file: callers must not keep it past {@link #release()}.
     *
     * @throws IllegalStateException if the lease was already released
     */
    ByteBuffer bytes();

    /** True once {@link #release()} has run. */
    boolean isReleased();

    /**
     * Releases the lease.
     *
     * @throws IllegalStateException naming the lease if it was already released
     */
    void release();
}
