package io.graphlane.cli;

import com.typesafe.config.ConfigException;
import com.typesafe.config.ConfigFactory;
import com.typesafe.config.ConfigValueFactory;
import io.graphlane.core.GraphlaneException;

/** A size option's value: bytes with an optional unit as HOCON reads it ({@code 536870912}, {@code 512m}, {@code 4g}, {@code 1.5 GiB}). */
public final class SizeOption {
    private SizeOption() {
    }

    /**
     * The positive number of bytes {@code value} names.
     *
     * @throws GraphlaneException naming {@code option}, what it takes and what it got
     */
    public static long parse(String option, String value) {
        String v = value == null ? "" : value.trim();
        long bytes;
        try {
            bytes = ConfigFactory.empty().withValue("size", ConfigValueFactory.fromAnyRef(v)).getBytes("size");
        } catch (ConfigException e) {
            throw new GraphlaneException(option + " must be a size in bytes with an optional unit (such as 512m, 4g or 1.5GiB), got '"
                    + value + "'");
        }
        if (bytes <= 0) {
            throw new GraphlaneException(option + " must be a positive size, got '" + value + "' (" + bytes + " bytes)");
        }
        return bytes;
    }
}
