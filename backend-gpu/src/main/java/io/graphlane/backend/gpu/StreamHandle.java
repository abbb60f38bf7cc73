package io.graphlane.backend.gpu;

import jcuda.driver.CUstream;

/** The device side of one executor: a stream that can wait on events and record them. */
interface StreamHandle {

    /** Makes work enqueued on this stream from now on wait for {@code event}, without blocking the caller. */
    void waitFor(EventHandle event);

    /** Records a new event after everything enqueued so far. */
    EventHandle record();

    /** The JCuda stream, for work that enqueues kernels, copies or library calls on it. */
    CUstream cuStream();

    /** Releases the stream; the device lets work already enqueued on it finish. */
    void destroy();
}
