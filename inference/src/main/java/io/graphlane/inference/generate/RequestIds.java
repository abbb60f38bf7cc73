package io.graphlane.inference.generate;

import java.util.concurrent.atomic.AtomicLong;

/** Request ids unique within this JVM, so requests of different generations never share a KV cache. */
public final class RequestIds {
    private static final AtomicLong NEXT = new AtomicLong(1);

    private RequestIds() {
    }

    /** The first of {@code count} consecutive fresh ids. */
    public static long next(int count) {
        return NEXT.getAndAdd(count);
    }
}
