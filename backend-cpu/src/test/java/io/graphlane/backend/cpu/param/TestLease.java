package io.graphlane.backend.cpu.param;

import io.graphlane.core.completion.Completion;
import io.graphlane.core.param.EncodedLease;
import io.graphlane.core.tensor.TensorSpec;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Supplier;

/** A lease over given bytes that counts its releases and records whether a watched completion had ended at release time. */
final class TestLease implements EncodedLease {
    private final String name;
    private final TensorSpec spec;
    private final ByteBuffer bytes;
    final AtomicInteger releases = new AtomicInteger();
    volatile Supplier<Completion> watched = () -> null;
    volatile Boolean completionDoneAtRelease;

    TestLease(String name, TensorSpec spec, ByteBuffer bytes) {
        this.name = name;
        this.spec = spec;
        this.bytes = bytes.duplicate().order(ByteOrder.LITTLE_ENDIAN);
    }

    @Override
    public String name() {
        return name;
    }

    @Override
    public TensorSpec spec() {
        return spec;
    }

    @Override
    public ByteBuffer bytes() {
        if (isReleased()) {
            throw new IllegalStateException("lease " + name + " was released");
        }
        return bytes.asReadOnlyBuffer().order(ByteOrder.LITTLE_ENDIAN);
    }

    @Override
    public boolean isReleased() {
        return releases.get() > 0;
    }

    @Override
    public void release() {
        Completion c = watched.get();
        if (c != null && completionDoneAtRelease == null) {
            completionDoneAtRelease = c.isDone();
        }
        if (releases.incrementAndGet() > 1) {
            throw new IllegalStateException("lease " + name + " released twice");
        }
    }
}
