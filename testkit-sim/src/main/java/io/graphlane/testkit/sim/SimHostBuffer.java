package io.graphlane.testkit.sim;

import java.util.Objects;

/**
 * A host-tier buffer of the simulated device: a name, a size and a value standing for its contents (what a copy must
 * carry over unchanged). Closing it only records that its holder let go.
 *
 * @param name  what the buffer holds
 * @param bytes its size, which sets how long a copy of it lasts
 * @param value its contents
 */
public record SimHostBuffer(String name, long bytes, long value) {
    public SimHostBuffer {
        Objects.requireNonNull(name, "name");
        if (bytes < 0) {
            throw new IllegalArgumentException("host buffer " + name + ": bytes must be >= 0, got " + bytes);
        }
    }
}
