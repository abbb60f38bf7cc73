package io.graphlane.checkpoint.safetensors;

import com.fasterxml.jackson.databind.JsonNode;
import io.graphlane.checkpoint.json.StrictJson;
import io.graphlane.core.tensor.DType;
import io.graphlane.core.tensor.Shape;
import io.graphlane.core.tensor.TensorSpec;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.CharBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CharsetDecoder;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Comparator;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;

/**
 * The fully validated header of one safetensors file. Every rule of CHECKPOINTS.md is checked
 * by {@link #read(Path)} before a caller can see the header, so no tensor byte is ever read
 * through an unvalidated header, and nothing is allocated by a size the file claims before that
 * size has been checked against the limit and the file's length.
 */
public final class SafetensorsHeader {
    /** The largest header accepted, in bytes (the safetensors reference limit). */
    public static final long MAX_HEADER_BYTES = 100_000_000L;

    /** The reserved header key holding a string → string metadata map. */
    public static final String METADATA_KEY = "__metadata__";

    private static final Set<String> ENTRY_FIELDS = Set.of("dtype", "shape", "data_offsets");

    private final Path file;
    private final long fileLength;
    private final long headerLength;
    private final Map<String, TensorEntry> tensors;
    private final Map<String, String> metadata;

    private SafetensorsHeader(Path file, long fileLength, long headerLength,
                              Map<String, TensorEntry> tensors, Map<String, String> metadata) {
        this.file = file;
        this.fileLength = fileLength;
        this.headerLength = headerLength;
        this.tensors = Collections.unmodifiableMap(tensors);
        this.metadata = Collections.unmodifiableMap(metadata);
    }

    /**
     * Reads and validates the header of {@code file}.
     *
     * @throws SafetensorsFormatException naming the file, tensor and field of the first rule broken
     */
    public static SafetensorsHeader read(Path file) {
        try (FileChannel channel = FileChannel.open(file, StandardOpenOption.READ)) {
            return read(file, channel);
        } catch (IOException e) {
            throw new SafetensorsFormatException(file, "cannot read the file: " + e, e);
        }
    }

    /**
     * Reads and validates the header from an open channel on {@code file}.
     *
     * @throws SafetensorsFormatException naming the file, tensor and field of the first rule broken
     */
    public static SafetensorsHeader read(Path file, FileChannel channel) throws IOException {
        long fileLength = channel.size();
        if (fileLength < 8) {
            throw new SafetensorsFormatException(file, "file is " + fileLength
                    + " bytes long, shorter than the 8-byte header length prefix");
        }
        ByteBuffer prefix = ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN);
        readFully(channel, prefix, 0, file);
        long n = prefix.getLong(0);
        if (n < 0 || n > MAX_HEADER_BYTES) {
            throw new SafetensorsFormatException(file, "header length " + Long.toUnsignedString(n)
                    + " is over the limit of " + MAX_HEADER_BYTES + " bytes");
        }
        if (n > fileLength - 8) {
            throw new SafetensorsFormatException(file, "header length " + n + " runs past the end of the file ("
                    + fileLength + " bytes, so at most " + (fileLength - 8) + " header bytes)");
        }
        ByteBuffer headerBytes = ByteBuffer.allocate((int) n);
        readFully(channel, headerBytes, 8, file);
        headerBytes.flip();
        String text = decodeUtf8(file, headerBytes);
        return parse(file, fileLength, n, text);
    }

    private static void readFully(FileChannel channel, ByteBuffer buffer, long position, Path file) throws IOException {
        long pos = position;
        while (buffer.hasRemaining()) {
            int read = channel.read(buffer, pos);
            if (read < 0) {
                throw new SafetensorsFormatException(file, "file ended while reading the header at byte " + pos);
            }
            pos += read;
        }
    }

    private static String decodeUtf8(Path file, ByteBuffer bytes) {
        CharsetDecoder decoder = StandardCharsets.UTF_8.newDecoder()
                .onMalformedInput(CodingErrorAction.REPORT)
                .onUnmappableCharacter(CodingErrorAction.REPORT);
        try {
            CharBuffer chars = decoder.decode(bytes);
            return chars.toString();
        } catch (CharacterCodingException e) {
            throw new SafetensorsFormatException(file, "header is not valid UTF-8 (" + e.getMessage()
                    + " near header byte " + bytes.position() + ")", e);
        }
    }

    private static SafetensorsHeader parse(Path file, long fileLength, long headerLength, String text) {
        StrictJson.Result result = StrictJson.parse(text);
        JsonNode root = result.node().orElseThrow(() ->
                new SafetensorsFormatException(file, "header is not valid JSON: " + result.error()));
        if (!root.isObject()) {
            throw new SafetensorsFormatException(file, "header is a JSON " + root.getNodeType().name().toLowerCase()
                    + ", expected an object of tensor name → {dtype, shape, data_offsets}");
        }
        Map<String, String> metadata = new LinkedHashMap<>();
        Map<String, TensorEntry> tensors = new LinkedHashMap<>();
        for (Iterator<Map.Entry<String, JsonNode>> it = root.properties().iterator(); it.hasNext(); ) {
            Map.Entry<String, JsonNode> field = it.next();
            String name = field.getKey();
            if (METADATA_KEY.equals(name)) {
                readMetadata(file, field.getValue(), metadata);
                continue;
            }
            tensors.put(name, readEntry(file, name, field.getValue()));
        }
        checkCoverage(file, fileLength, headerLength, tensors.values());
        return new SafetensorsHeader(file, fileLength, headerLength, tensors, metadata);
    }

    private static void readMetadata(Path file, JsonNode node, Map<String, String> metadata) {
        if (!node.isObject()) {
            throw new SafetensorsFormatException(file, "field '" + METADATA_KEY + "' is a JSON "
                    + node.getNodeType().name().toLowerCase() + ", expected an object of strings");
        }
        for (Iterator<Map.Entry<String, JsonNode>> it = node.properties().iterator(); it.hasNext(); ) {
            Map.Entry<String, JsonNode> e = it.next();
            if (!e.getValue().isTextual()) {
                throw new SafetensorsFormatException(file, "field '" + METADATA_KEY + "." + e.getKey() + "' is a JSON "
                        + e.getValue().getNodeType().name().toLowerCase() + ", expected a string");
            }
            metadata.put(e.getKey(), e.getValue().textValue());
        }
    }

    private static TensorEntry readEntry(Path file, String name, JsonNode node) {
        String where = "tensor '" + name + "'";
        if (name.isEmpty()) {
            throw new SafetensorsFormatException(file, "a tensor has an empty name");
        }
        if (!node.isObject()) {
            throw new SafetensorsFormatException(file, where + " is a JSON " + node.getNodeType().name().toLowerCase()
                    + ", expected an object with dtype, shape and data_offsets");
        }
        for (Iterator<String> it = node.fieldNames(); it.hasNext(); ) {
            String f = it.next();
            if (!ENTRY_FIELDS.contains(f)) {
                throw new SafetensorsFormatException(file, where + " has an unknown field '" + f
                        + "', expected only dtype, shape and data_offsets");
            }
        }
        JsonNode dtypeNode = required(file, where, node, "dtype");
        if (!dtypeNode.isTextual()) {
            throw new SafetensorsFormatException(file, where + ": field 'dtype' is not a string (found " + dtypeNode + ")");
        }
        DType dtype = dtypeOf(dtypeNode.textValue()).orElseThrow(() -> new SafetensorsFormatException(file,
                where + ": field 'dtype' has unknown dtype \"" + dtypeNode.textValue() + "\", expected one of "
                        + DType.supportedNames()));
        JsonNode shapeNode = required(file, where, node, "shape");
        if (!shapeNode.isArray()) {
            throw new SafetensorsFormatException(file, where + ": field 'shape' is not an array (found " + shapeNode + ")");
        }
        long[] dims = new long[shapeNode.size()];
        for (int i = 0; i < dims.length; i++) {
            dims[i] = nonNegativeInteger(file, where + ": field 'shape' dimension " + i, shapeNode.get(i));
        }
        Shape shape;
        long bytes;
        try {
            shape = Shape.of(dims);
            bytes = shape.byteSize(dtype);
        } catch (IllegalArgumentException e) {
            throw new SafetensorsFormatException(file, where + ": field 'shape': " + e.getMessage());
        }
        JsonNode offsetsNode = required(file, where, node, "data_offsets");
        if (!offsetsNode.isArray() || offsetsNode.size() != 2) {
            throw new SafetensorsFormatException(file, where + ": field 'data_offsets' must be an array [begin, end] (found "
                    + offsetsNode + ")");
        }
        long begin = nonNegativeInteger(file, where + ": field 'data_offsets' begin", offsetsNode.get(0));
        long end = nonNegativeInteger(file, where + ": field 'data_offsets' end", offsetsNode.get(1));
        if (end < begin) {
            throw new SafetensorsFormatException(file, where + ": field 'data_offsets' end " + end
                    + " is before begin " + begin);
        }
        if (end - begin != bytes) {
            throw new SafetensorsFormatException(file, where + ": field 'data_offsets' spans " + (end - begin)
                    + " bytes, expected " + bytes + " (" + shape.elementCount() + " elements of " + dtype + " × "
                    + dtype.byteSize() + " bytes, shape " + shape + ")");
        }
        return new TensorEntry(name, new TensorSpec(dtype, shape), begin, end);
    }

    private static java.util.Optional<DType> dtypeOf(String name) {
        // safetensors spells dtypes in upper case; a different spelling is a different (unknown) dtype
        return DType.fromName(name).filter(d -> d.name().equals(name));
    }

    private static JsonNode required(Path file, String where, JsonNode node, String field) {
        JsonNode value = node.get(field);
        if (value == null || value.isNull()) {
            throw new SafetensorsFormatException(file, where + " has no field '" + field + "'");
        }
        return value;
    }

    private static long nonNegativeInteger(Path file, String what, JsonNode node) {
        if (!node.isIntegralNumber()) {
            throw new SafetensorsFormatException(file, what + " is not an integer (found " + node + ")");
        }
        if (!node.canConvertToLong()) {
            throw new SafetensorsFormatException(file, what + " is " + node + ", more than fits in 64 bits");
        }
        long v = node.longValue();
        if (v < 0) {
            throw new SafetensorsFormatException(file, what + " is negative (" + v + ")");
        }
        return v;
    }

    private static void checkCoverage(Path file, long fileLength, long headerLength, Iterable<TensorEntry> entries) {
        List<TensorEntry> sorted = new ArrayList<>();
        entries.forEach(sorted::add);
        sorted.sort(Comparator.comparingLong(TensorEntry::begin).thenComparingLong(TensorEntry::end));
        long dataLength = fileLength - 8 - headerLength;
        long expected = 0;
        TensorEntry previous = null;
        for (TensorEntry e : sorted) {
            if (e.begin() != expected) {
                String prev = previous == null ? "the start of the data region" : "tensor '" + previous.name() + "' ending at " + expected;
                String kind = e.begin() > expected ? "leaves a gap of " + (e.begin() - expected) + " bytes after "
                        : "overlaps by " + (expected - e.begin()) + " bytes with ";
                throw new SafetensorsFormatException(file, "tensor '" + e.name() + "': field 'data_offsets' begin "
                        + e.begin() + " " + kind + prev + " (expected begin " + expected + ")");
            }
            expected = e.end();
            previous = e;
        }
        if (expected != dataLength) {
            throw new SafetensorsFormatException(file, "tensor data ends at " + expected + " but the data region is "
                    + dataLength + " bytes (file length " + fileLength + " − 8 − header " + headerLength + ")"
                    + (expected > dataLength ? ": the file is truncated" : ": trailing bytes follow the last tensor"));
        }
    }

    /** The file this header was read from. */
    public Path file() {
        return file;
    }

    /** The file's length in bytes. */
    public long fileLength() {
        return fileLength;
    }

    /** The header's JSON length N in bytes. */
    public long headerLength() {
        return headerLength;
    }

    /** The absolute file offset where the data region starts (8 + N). */
    public long dataStart() {
        return 8 + headerLength;
    }

    /** The tensors in header order, by name. */
    public Map<String, TensorEntry> tensors() {
        return tensors;
    }

    /** The tensor named {@code name}, or null. */
    public TensorEntry tensor(String name) {
        return tensors.get(Objects.requireNonNull(name, "name"));
    }

    /** The {@code __metadata__} string map (empty if absent). */
    public Map<String, String> metadata() {
        return metadata;
    }
}
