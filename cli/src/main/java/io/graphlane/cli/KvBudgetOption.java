package io.graphlane.cli;

import com.typesafe.config.ConfigException;
import com.typesafe.config.ConfigFactory;
import com.typesafe.config.ConfigValueFactory;
import io.graphlane.core.GraphlaneException;
import java.util.OptionalLong;

/**
 * The value of {@code --kv-budget} (and of {@code graphlane.cluster.pipeline.kv-budget}): {@code auto}, or a size in
 * bytes with an optional unit as HOCON reads it ({@code 536870912}, {@code 512m}, {@code 4g}, {@code 1.5 GiB}).
 */
final class KvBudgetOption {
    /** The value that asks for the default budget. */
    static final String AUTO = "auto";

    private KvBudgetOption() {
    }

    /**
     * The budget in bytes {@code value} names, or empty for {@code auto}.
     *
     * @throws GraphlaneException naming {@code option}, what it takes and what it got, if {@code value} is neither
     */
    static OptionalLong parse(String option, String value) {
        String v = value == null ? "" : value.trim();
        if (v.equalsIgnoreCase(AUTO)) {
            return OptionalLong.empty();
        }
        long bytes;
        try {
            bytes = ConfigFactory.empty().withValue("size", ConfigValueFactory.fromAnyRef(v)).getBytes("size");
        } catch (ConfigException e) {
            throw new GraphlaneException(option + " must be auto or a size in bytes with an optional unit (such as 512m, 4g"
                    + " or 1.5GiB), got '" + value + "'");
        }
        if (bytes <= 0) {
            throw new GraphlaneException(option + " must be a positive size, got '" + value + "' (" + bytes + " bytes)");
        }
        return OptionalLong.of(bytes);
    }
}
