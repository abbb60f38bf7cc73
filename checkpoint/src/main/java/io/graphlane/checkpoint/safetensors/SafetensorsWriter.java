package io.graphlane.checkpoint.safetensors;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.graphlane.checkpoint.CheckpointException;
import io.graphlane.checkpoint.json.StrictJson;
import io.graphlane.core.tensor.TensorSpec;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.channels.WritableByteChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * Writes dense tensors and a {@code __metadata__} map as one safetensors file that
 * {@link SafetensorsHeader#read} accepts: tensors in the order added, contiguous, the header padded
 * with spaces to a multiple of 8 bytes so every tensor starts 8-byte aligned. The file is written
 * to a temporary sibling and moved into place, so a failed write leaves no partial file behind.
 */
public final class SafetensorsWriter {
    private final Map<String, Pending> tensors = new LinkedHashMap<>();
    private final Map<String, String> metadata = new LinkedHashMap<>();

    /** Streams a tensor's bytes, dense and little-endian, exactly the spec's byte size. */
    @FunctionalInterface
    public interface TensorContent {
        /** Writes all of the tensor's bytes to {@code out}. */
        void writeTo(WritableByteChannel out) throws IOException;
    }

    private record Pending(String name, TensorSpec spec, TensorContent content) {
    }

    /** Adds one {@code __metadata__} entry. */
    public SafetensorsWriter metadata(String key, String value) {
        metadata.put(Objects.requireNonNull(key, "key"), Objects.requireNonNull(value, "value"));
        return this;
    }

    /**
     * Adds a tensor whose bytes are {@code data}'s remaining bytes (read from its position, not consumed).
     *
     * @throws IllegalArgumentException naming the tensor if the byte count does not match the spec
     */
    public SafetensorsWriter add(String name, TensorSpec spec, ByteBuffer data) {
        ByteBuffer copy = data.duplicate();
        if (copy.remaining() != spec.byteSize()) {
            throw new IllegalArgumentException("tensor '" + name + "': " + copy.remaining() + " bytes given, expected "
                    + spec.byteSize() + " for " + spec);
        }
        return add(name, spec, out -> {
            ByteBuffer b = copy.duplicate();
            while (b.hasRemaining()) {
                out.write(b);
            }
        });
    }

    /** Adds a tensor of F32 values (written little-endian). */
    public SafetensorsWriter addF32(String name, long[] shape, float[] values) {
        ByteBuffer b = ByteBuffer.allocate(values.length * 4).order(ByteOrder.LITTLE_ENDIAN);
        b.asFloatBuffer().put(values);
        return add(name, TensorSpec.of(io.graphlane.core.tensor.DType.F32, shape), b);
    }

    /**
     * Adds a tensor whose bytes {@code content} streams when the file is written (for files larger than the heap).
     *
     * @throws IllegalArgumentException naming the tensor if the name is empty, reserved or already added
     */
    public SafetensorsWriter add(String name, TensorSpec spec, TensorContent content) {
        Objects.requireNonNull(spec, "spec");
        Objects.requireNonNull(content, "content");
        if (name == null || name.isEmpty() || SafetensorsHeader.METADATA_KEY.equals(name)) {
            throw new IllegalArgumentException("tensor name '" + name + "' is empty or reserved");
        }
        if (tensors.containsKey(name)) {
            throw new IllegalArgumentException("tensor '" + name + "' was already added");
        }
        tensors.put(name, new Pending(name, spec, content));
        return this;
    }

    /** The header JSON this writer will produce, padded to a multiple of 8 bytes. */
    byte[] headerBytes() {
        ObjectNode root = StrictJson.mapper().createObjectNode();
        if (!metadata.isEmpty()) {
            ObjectNode meta = root.putObject(SafetensorsHeader.METADATA_KEY);
            metadata.forEach(meta::put);
        }
        long offset = 0;
        for (Pending p : tensors.values()) {
            ObjectNode entry = root.putObject(p.name());
            entry.put("dtype", p.spec().dtype().name());
            ArrayNode shape = entry.putArray("shape");
            for (long d : p.spec().shape().dims()) {
                shape.add(d);
            }
            long end = offset + p.spec().byteSize();
            entry.putArray("data_offsets").add(offset).add(end);
            offset = end;
        }
        byte[] json;
        try {
            json = StrictJson.mapper().writeValueAsString(root).getBytes(StandardCharsets.UTF_8);
        } catch (JsonProcessingException e) {
            throw new IllegalStateException("cannot render a safetensors header", e);
        }
        int padded = (json.length + 7) / 8 * 8;
        byte[] out = new byte[padded];
        System.arraycopy(json, 0, out, 0, json.length);
        for (int i = json.length; i < padded; i++) {
            out[i] = ' ';
        }
        return out;
    }

    /**
     * Writes the file (replacing any file at {@code path}) and returns its validated header.
     *
     * @throws CheckpointException naming the file and tensor if a tensor's content writes the wrong byte count
     * @throws UncheckedIOException if the file cannot be written
     */
    public SafetensorsHeader write(Path path) {
        byte[] header = headerBytes();
        Path dir = path.toAbsolutePath().getParent();
        Path tmp = null;
        try {
            Files.createDirectories(dir);
            tmp = Files.createTempFile(dir, "." + path.getFileName(), ".tmp");
            try (FileChannel ch = FileChannel.open(tmp, StandardOpenOption.WRITE, StandardOpenOption.TRUNCATE_EXISTING)) {
                ByteBuffer prefix = ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN).putLong(0, header.length);
                writeAll(ch, prefix);
                writeAll(ch, ByteBuffer.wrap(header));
                for (Pending p : tensors.values()) {
                    long before = ch.position();
                    p.content().writeTo(ch);
                    long written = ch.position() - before;
                    if (written != p.spec().byteSize()) {
                        throw new CheckpointException(path + ": tensor '" + p.name() + "': content wrote " + written
                                + " bytes, expected " + p.spec().byteSize() + " for " + p.spec());
                    }
                }
            }
            Files.move(tmp, path, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
            tmp = null;
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write safetensors file " + path + ": " + e.getMessage(), e);
        } finally {
            if (tmp != null) {
                try {
                    Files.deleteIfExists(tmp);
                } catch (IOException ignored) {
                    // the original failure is the one worth reporting
                }
            }
        }
        return SafetensorsHeader.read(path);
    }

    private static void writeAll(FileChannel ch, ByteBuffer b) throws IOException {
        while (b.hasRemaining()) {
            ch.write(b);
        }
    }

    /** The names added so far, in file order. */
    public List<String> names() {
        return new ArrayList<>(tensors.keySet());
    }
}
