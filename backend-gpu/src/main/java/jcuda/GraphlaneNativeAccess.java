package jcuda;

/**
 * Reads the raw address JCuda keeps behind a handle or pointer, which JCuda only exposes to its
 * own package; graphlane hands these addresses to JavaCPP's NCCL bindings. Lives in package
 * {@code jcuda} for that reason and must stay on the class path (not the module path).
 */
public final class GraphlaneNativeAccess {
    private GraphlaneNativeAccess() {
    }

    /** The native handle of a JCuda object (a stream, an event), or 0 when it was never created. */
    public static long handle(NativePointerObject object) {
        return object.getNativePointer();
    }

    /** The address a JCuda pointer designates: its native pointer plus its byte offset. */
    public static long address(Pointer pointer) {
        return pointer.getNativePointer() + pointer.getByteOffset();
    }
}
