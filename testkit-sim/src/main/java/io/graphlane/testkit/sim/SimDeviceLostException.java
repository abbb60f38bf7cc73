package io.graphlane.testkit.sim;

import io.graphlane.core.GraphlaneException;

/**
 * The simulated device was lost: the work of a pending completion was never proven to have
 * ended, and calls that change the device's state are refused.
 */
public final class SimDeviceLostException extends GraphlaneException {
    private static final long serialVersionUID = 1L;

    SimDeviceLostException(String device, String what, String reason) {
        super(what + ": device " + device + " was lost (" + reason + "); its pending work can never be proven, "
                + "values retained by it are leaked on purpose; start a new backend");
    }
}
