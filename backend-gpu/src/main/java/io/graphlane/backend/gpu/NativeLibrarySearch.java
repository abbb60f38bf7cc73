package io.graphlane.backend.gpu;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.TimeUnit;

/**
 * Finds the CUDA user libraries (libcudart, libcublas, libnvrtc, libnccl) as files: first in the
 * dynamic loader's path ({@code LD_LIBRARY_PATH}, the folders of {@code /etc/ld.so.conf} and the
 * system's default folders, then {@code java.library.path}), then in the {@code lib} folders of
 * pip's {@code nvidia} packages of the {@code python3} on {@code PATH} (the CUDA wheels, such as
 * {@code nvidia/cu13/lib} or {@code nvidia/nccl/lib}). The wheel folders are asked for once per JVM.
 */
final class NativeLibrarySearch {
    /** Asks python3 where its nvidia namespace package lives (one folder per line). */
    static final String PYTHON_NVIDIA_PATHS = "import nvidia\nfor p in nvidia.__path__: print(p)";
    private static final List<String> DEFAULT_FOLDERS = List.of("/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib64", "/usr/lib64",
            "/lib", "/usr/lib", "/usr/local/cuda/lib64", "/usr/local/cuda/targets/x86_64-linux/lib");

    private final List<Path> loaderFolders;
    private final WheelFolders wheels;

    NativeLibrarySearch(List<Path> loaderFolders, WheelFolders wheels) {
        this.loaderFolders = List.copyOf(loaderFolders);
        this.wheels = wheels;
    }

    /** The search of this process: its environment, its ld.so.conf, and the python3 on its PATH. */
    static NativeLibrarySearch ofThisProcess() {
        return Holder.INSTANCE;
    }

    private static final class Holder {
        static final NativeLibrarySearch INSTANCE = new NativeLibrarySearch(systemLoaderFolders(),
                WheelFolders.fromPython(System.getenv().getOrDefault("GRAPHLANE_PYTHON", "python3")));
    }

    /** The file of {@code sharedObject} in the first folder that holds it: the loader's folders, then the wheels'. */
    Optional<Path> find(String sharedObject) {
        for (Path folder : loaderFolders) {
            Path candidate = folder.resolve(sharedObject);
            if (Files.isRegularFile(candidate)) {
                return Optional.of(candidate);
            }
        }
        for (Path folder : wheels.folders()) {
            Path candidate = folder.resolve(sharedObject);
            if (Files.isRegularFile(candidate)) {
                return Optional.of(candidate);
            }
        }
        return Optional.empty();
    }

    /** Where {@link #find} looked, in one line, for an error message. */
    String whereLooked() {
        return "looked in the loader path (" + (loaderFolders.isEmpty() ? "no folders" : join(loaderFolders)) + ") and in "
                + wheels.describe();
    }

    private static String join(List<Path> folders) {
        List<String> names = new ArrayList<>();
        folders.forEach(f -> names.add(f.toString()));
        return String.join(":", names);
    }

    /** LD_LIBRARY_PATH, the folders ld.so.conf names (one include level deep), the default folders, java.library.path. */
    static List<Path> systemLoaderFolders() {
        Set<Path> folders = new LinkedHashSet<>();
        addPathList(folders, System.getenv("LD_LIBRARY_PATH"));
        for (String line : readLines(Path.of("/etc/ld.so.conf"))) {
            if (line.startsWith("include ")) {
                for (Path conf : glob(line.substring("include ".length()).strip())) {
                    readLines(conf).stream().filter(l -> l.startsWith("/")).forEach(l -> folders.add(Path.of(l)));
                }
            } else if (line.startsWith("/")) {
                folders.add(Path.of(line));
            }
        }
        DEFAULT_FOLDERS.forEach(f -> folders.add(Path.of(f)));
        addPathList(folders, System.getProperty("java.library.path"));
        return new ArrayList<>(folders);
    }

    private static void addPathList(Set<Path> folders, String list) {
        if (list == null) {
            return;
        }
        for (String entry : list.split(":")) {
            if (!entry.isBlank()) {
                folders.add(Path.of(entry.strip()));
            }
        }
    }

    private static List<String> readLines(Path file) {
        try {
            List<String> lines = new ArrayList<>();
            for (String line : Files.readAllLines(file, StandardCharsets.UTF_8)) {
                int hash = line.indexOf('#');
                String kept = (hash < 0 ? line : line.substring(0, hash)).strip();
                if (!kept.isEmpty()) {
                    lines.add(kept);
                }
            }
            return lines;
        } catch (IOException | RuntimeException e) {
            return List.of();
        }
    }

    /** The files matching a glob whose wildcards are only in its last element, such as /etc/ld.so.conf.d/*.conf. */
    private static List<Path> glob(String pattern) {
        Path p = Path.of(pattern);
        Path parent = p.getParent();
        if (parent == null || !Files.isDirectory(parent)) {
            return List.of();
        }
        List<Path> out = new ArrayList<>();
        try (DirectoryStream<Path> entries = Files.newDirectoryStream(parent, p.getFileName().toString())) {
            entries.forEach(out::add);
        } catch (IOException | RuntimeException e) {
            return List.of();
        }
        out.sort(null);
        return out;
    }

    /** The {@code lib} folders of pip's nvidia packages, and how they were found (or why none were). */
    record WheelFolders(List<Path> folders, String source) {
        WheelFolders {
            folders = List.copyOf(folders);
        }

        String describe() {
            return folders.isEmpty() ? "no nvidia wheel folders (" + source + ")" : "the nvidia wheel folders of " + source + " ("
                    + join(folders) + ")";
        }

        /** The lib folders under each folder of the nvidia namespace package, as {@code python} reports them. */
        static WheelFolders fromPython(String python) {
            Process process;
            try {
                process = new ProcessBuilder(python, "-c", PYTHON_NVIDIA_PATHS).redirectErrorStream(true).start();
            } catch (IOException e) {
                return new WheelFolders(List.of(), python + " not found on PATH");
            }
            try (InputStream out = process.getInputStream()) {
                process.getOutputStream().close();
                if (!process.waitFor(10, TimeUnit.SECONDS)) {
                    process.destroyForcibly();
                    return new WheelFolders(List.of(), python + " did not answer within 10 s");
                }
                String text = new String(out.readAllBytes(), StandardCharsets.UTF_8);
                if (process.exitValue() != 0) {
                    String last = text.strip().lines().reduce((a, b) -> b).orElse("exit status " + process.exitValue());
                    return new WheelFolders(List.of(), python + " has no nvidia package: " + last);
                }
                List<Path> roots = text.lines().map(String::strip).filter(l -> !l.isEmpty()).map(Path::of).toList();
                return new WheelFolders(libFoldersUnder(roots), python + " (" + join(roots) + ")");
            } catch (IOException e) {
                return new WheelFolders(List.of(), "reading " + python + "'s answer failed: " + e.getMessage());
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                process.destroyForcibly();
                return new WheelFolders(List.of(), "interrupted while asking " + python);
            }
        }

        /** {@code root/<package>/lib} for every package folder under each root, sorted by name. */
        static List<Path> libFoldersUnder(List<Path> roots) {
            List<Path> libs = new ArrayList<>();
            for (Path root : roots) {
                List<Path> packages = new ArrayList<>();
                try (DirectoryStream<Path> entries = Files.newDirectoryStream(root, Files::isDirectory)) {
                    entries.forEach(packages::add);
                } catch (IOException | RuntimeException e) {
                    continue;
                }
                packages.sort(null);
                for (Path pkg : packages) {
                    if (Files.isDirectory(pkg.resolve("lib"))) {
                        libs.add(pkg.resolve("lib"));
                    }
                }
            }
            return libs;
        }
    }
}
