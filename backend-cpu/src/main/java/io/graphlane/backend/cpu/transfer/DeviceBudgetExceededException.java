package io.graphlane.backend.cpu.transfer;

import io.graphlane.core.GraphlaneException;

/** The CPU device pool cannot hold a copy; the message names the pool, the copy, the bytes needed and free. */
public final class DeviceBudgetExceededException extends GraphlaneException {
    private static final long serialVersionUID = 1L;

    public DeviceBudgetExceededException(String message) {
        super(message);
    }
}
