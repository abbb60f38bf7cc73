package io.graphlane.backend.gpu;

import java.util.ArrayList;
import java.util.EnumMap;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import jcuda.driver.CUresult;
import jcuda.driver.JCudaDriver;
import java.nio.file.Path;
import java.util.HashMap;
import org.bytedeco.javacpp.Loader;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Loads each CUDA library at most once per JVM and remembers the outcome. A library that
 * failed to load keeps failing with the same message and the same first cause, so a later
 * touch never degrades into the JVM's "Could not initialize class" error.
 *
 * <p>The driver API goes through JCuda (only {@code libcuda.so.1} of the NVIDIA driver). The CUDA
 * user libraries go through JavaCPP's CUDA preset: their shared objects are first looked up as files
 * ({@link NativeLibrarySearch}: the loader's path, then the lib folders of the nvidia wheels of the
 * {@code python3} on PATH) and loaded by absolute path, dependencies first, so JavaCPP's JNI glue
 * finds them already loaded; one line names every shared object that is missing and where it looked.
 */
public final class CudaLibraries {
    private static final Logger LOG = LoggerFactory.getLogger(CudaLibraries.class);
    private static final Pattern MISSING_OBJECT =
            Pattern.compile("(lib[A-Za-z0-9_+\\-.]*?\\.so(?:\\.[0-9]+)*): cannot open shared object file");

    /** The first outcome of loading each library: empty when it loaded, else the failure to repeat. */
    private static final Map<CudaLibrary, Optional<GpuUnavailableException>> OUTCOMES = new EnumMap<>(CudaLibrary.class);
    /** The shared objects loaded by absolute path so far, by name (guarded by OUTCOMES). */
    private static final Map<String, Path> LOADED = new HashMap<>();

    private CudaLibraries() {
    }

    /**
     * Ensures {@code library} is loaded (and, for the driver, initialized with at least one device).
     *
     * @throws GpuUnavailableException naming what is missing, with the first failure as its cause, now and on every later call
     */
    public static void require(CudaLibrary library) {
        Optional<GpuUnavailableException> outcome;
        synchronized (OUTCOMES) {
            outcome = OUTCOMES.computeIfAbsent(library, CudaLibraries::probe);
        }
        if (outcome.isPresent()) {
            GpuUnavailableException first = outcome.get();
            throw new GpuUnavailableException(first.getMessage(), first.getCause() == null ? first : first.getCause());
        }
    }

    /** True when {@link #require} would pass; never throws. */
    public static boolean isAvailable(CudaLibrary library) {
        try {
            require(library);
            return true;
        } catch (GpuUnavailableException e) {
            return false;
        }
    }

    /** Why {@code library} is unavailable, or empty when it loads; never throws. */
    public static Optional<String> unavailableReason(CudaLibrary library) {
        try {
            require(library);
            return Optional.empty();
        } catch (GpuUnavailableException e) {
            return Optional.of(e.getMessage());
        }
    }

    private static Optional<GpuUnavailableException> probe(CudaLibrary library) {
        try {
            switch (library) {
                case DRIVER -> {
                    JCudaDriver.setExceptionsEnabled(false);
                    int result = JCudaDriver.cuInit(0);
                    if (result != CUresult.CUDA_SUCCESS) {
                        return Optional.of(new GpuUnavailableException("GPU backend unavailable: cuInit failed with "
                                + CudaErrors.name(result) + " (" + result + ")" + driverHint(result) + "; "
                                + GpuUnavailableException.HINT));
                    }
                    int[] count = new int[1];
                    CudaErrors.check(JCudaDriver.cuDeviceGetCount(count), "cuDeviceGetCount", "the driver");
                    if (count[0] == 0) {
                        return Optional.of(new GpuUnavailableException("GPU backend unavailable: the NVIDIA driver reports no CUDA device"
                                + visibleDevicesNote() + "; " + GpuUnavailableException.HINT));
                    }
                }
                case RUNTIME, NVRTC, CUBLAS, NCCL -> {
                    Optional<GpuUnavailableException> missing = loadSharedObjects(library, NativeLibrarySearch.ofThisProcess());
                    if (missing.isPresent()) {
                        return missing;
                    }
                    loadGlue(library);
                }
            }
            LOG.debug("loaded {} ({})", library.description(), library.sharedObject());
            return Optional.empty();
        } catch (LinkageError | RuntimeException e) {
            GpuUnavailableException failure = new GpuUnavailableException(
                    "GPU backend unavailable: " + library.description() + " could not be loaded ("
                            + missingWhat(library, e) + "); " + GpuUnavailableException.HINT, e);
            LOG.debug("{} is unavailable", library.description(), e);
            return Optional.of(failure);
        }
    }

    /**
     * Loads {@code library}'s shared objects by absolute path, dependencies first; empty when all were found,
     * else the failure naming every missing one and where the search looked.
     */
    static Optional<GpuUnavailableException> loadSharedObjects(CudaLibrary library, NativeLibrarySearch search) {
        List<String> missing = new ArrayList<>();
        Map<String, Path> found = new java.util.LinkedHashMap<>();
        for (String sharedObject : library.sharedObjects()) {
            Path already = LOADED.get(sharedObject);
            Optional<Path> file = already != null ? Optional.of(already) : search.find(sharedObject);
            file.ifPresentOrElse(f -> found.put(sharedObject, f), () -> missing.add(sharedObject));
        }
        if (!missing.isEmpty()) {
            return Optional.of(new GpuUnavailableException("GPU backend unavailable: " + library.description() + " could not be loaded ("
                    + String.join(", ", missing) + " not found; " + search.whereLooked() + "); " + GpuUnavailableException.HINT));
        }
        for (Map.Entry<String, Path> e : found.entrySet()) {
            if (!LOADED.containsKey(e.getKey())) {
                System.load(e.getValue().toString());
                LOADED.put(e.getKey(), e.getValue());
                LOG.debug("loaded {} from {}", e.getKey(), e.getValue());
            }
        }
        return Optional.empty();
    }

    /** Loads JavaCPP's JNI glue of {@code library} (the CUDA runtime's first), which links against the shared objects loaded before. */
    private static void loadGlue(CudaLibrary library) {
        switch (library) {
            case RUNTIME -> Loader.load(org.bytedeco.cuda.global.cudart.class);
            case NVRTC -> {
                Loader.load(org.bytedeco.cuda.global.nvrtc.class);
                org.bytedeco.cuda.global.nvrtc.nvrtcVersion(new int[1], new int[1]);
            }
            case CUBLAS -> Loader.load(org.bytedeco.cuda.global.cublas.class);
            case NCCL -> Loader.load(org.bytedeco.cuda.global.nccl.class);
            default -> throw new IllegalArgumentException(library + " has no JavaCPP glue");
        }
    }

    /**
     * The most telling line of a native loading failure: the shared object the dynamic loader
     * could not find, else the first line of the first message in the cause chain.
     */
    static String missingWhat(CudaLibrary library, Throwable failure) {
        List<String> messages = new ArrayList<>();
        collectMessages(failure, messages, java.util.Collections.newSetFromMap(new IdentityHashMap<>()));
        for (String message : messages) {
            Matcher m = MISSING_OBJECT.matcher(message);
            if (m.find()) {
                return m.group(1) + " not found";
            }
        }
        String first = messages.isEmpty() ? failure.getClass().getName() : firstLine(messages.get(0));
        return library.sharedObject() + " or its JNI glue did not load: " + first;
    }

    private static void collectMessages(Throwable t, List<String> out, Set<Throwable> seen) {
        if (t == null || !seen.add(t)) {
            return;
        }
        if (t.getMessage() != null) {
            out.add(t.getMessage());
        }
        for (Throwable s : t.getSuppressed()) {
            collectMessages(s, out, seen);
        }
        collectMessages(t.getCause(), out, seen);
    }

    private static String firstLine(String message) {
        int nl = message.indexOf('\n');
        return (nl < 0 ? message : message.substring(0, nl)).strip();
    }

    private static String driverHint(int result) {
        if (result == CUresult.CUDA_ERROR_NO_DEVICE) {
            return ": no CUDA device is visible" + visibleDevicesNote();
        }
        if (result == CUresult.CUDA_ERROR_STUB_LIBRARY) {
            return ": libcuda.so.1 is the toolkit's stub, not a real NVIDIA driver";
        }
        if (result == CUresult.CUDA_ERROR_SYSTEM_DRIVER_MISMATCH) {
            return ": the kernel driver and libcuda.so.1 versions differ";
        }
        return "";
    }

    /** Mentions CUDA_VISIBLE_DEVICES when it is set, since the driver hides every device it does not list. */
    static String visibleDevicesNote() {
        String visible = System.getenv("CUDA_VISIBLE_DEVICES");
        return visible == null ? "" : " (CUDA_VISIBLE_DEVICES=\"" + visible + "\" limits what the driver shows)";
    }
}
