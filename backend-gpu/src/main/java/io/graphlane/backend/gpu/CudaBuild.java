package io.graphlane.backend.gpu;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.util.Properties;

/**
 * What this build of the backend was built against, from {@code cuda-build.properties} (written by Maven):
 * the CUDA major version of the JavaCPP CUDA preset on the class path, which fixes the versions of the
 * CUDA user libraries the host must provide.
 */
public final class CudaBuild {
    private static final Properties PROPERTIES = load();

    private CudaBuild() {
    }

    /** The CUDA major version of {@code libcudart.so.N}, {@code libnvrtc.so.N} and {@code libcublas.so.N}: 13 or 12. */
    public static int cudaMajor() {
        String major = PROPERTIES.getProperty("cuda.major", "13").strip();
        return major.matches("[0-9]+") ? Integer.parseInt(major) : 13;
    }

    /** The JavaCPP release of every bytedeco artifact of this build. */
    public static String javacppVersion() {
        return PROPERTIES.getProperty("javacpp.version", "unknown");
    }

    private static Properties load() {
        Properties p = new Properties();
        try (InputStream in = CudaBuild.class.getResourceAsStream("cuda-build.properties")) {
            if (in != null) {
                p.load(in);
            }
        } catch (IOException e) {
            throw new UncheckedIOException("reading cuda-build.properties of backend-gpu", e);
        }
        return p;
    }
}
