package io.graphlane.core.backend;

import io.graphlane.core.GraphlaneException;

/** {@code orderAfter} between a producer and an executor on different devices; nothing was queued. */
public final class CrossDeviceOrderingException extends GraphlaneException {
    private static final long serialVersionUID = 1L;

    public CrossDeviceOrderingException(String producer, String producerDevice, String executor, String executorDevice) {
        super("orderAfter refused: producer " + producer + " is on device " + producerDevice + " but executor " + executor
                + " is on device " + executorDevice + "; order across devices through a transfer, or by message between lane actors");
    }
}
