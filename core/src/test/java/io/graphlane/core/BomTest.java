package io.graphlane.core;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/** graphlane-bom names every library module of the build, at the build's version. */
class BomTest {

    @Test
    void theBomListsEveryLibraryModuleAtTheParentsVersion() throws Exception {
        String parent = Files.readString(Path.of("..", "pom.xml"), StandardCharsets.UTF_8);
        String bom = Files.readString(Path.of("..", "bom", "pom.xml"), StandardCharsets.UTF_8);
        String version = first(parent, "<artifactId>graphlane-parent</artifactId>\\s*<version>([^<]+)</version>");
        assertEquals(version, first(bom, "<artifactId>graphlane-bom</artifactId>\\s*<version>([^<]+)</version>"), "the BOM's version");
        assertEquals(version, first(bom, "<graphlane.version>([^<]+)</graphlane.version>"), "the version the BOM gives its artifacts");
        List<String> missing = new ArrayList<>();
        Matcher modules = Pattern.compile("<module>([^<]+)</module>").matcher(parent);
        while (modules.find()) {
            String module = modules.group(1);
            if (List.of("bom", "cli", "bench").contains(module)) {
                continue; // the BOM itself, the executable jar, the benchmarks: not libraries
            }
            if (!bom.contains("<artifactId>graphlane-" + module + "</artifactId>")) {
                missing.add("graphlane-" + module);
            }
        }
        assertEquals(List.of(), missing, "library modules the BOM does not list");
    }

    private static String first(String text, String regex) {
        Matcher m = Pattern.compile(regex).matcher(text);
        assertTrue(m.find(), regex);
        return m.group(1);
    }
}
