package io.graphlane.checkpoint.safetensors;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Every header refusal of CHECKPOINTS.md, each with a crafted file. */
class SafetensorsHeaderRefusalTest {
    @TempDir
    Path tmp;

    private static final String A = "\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}";
    private static final String B = "\"b\":{\"dtype\":\"I8\",\"shape\":[4],\"data_offsets\":[8,12]}";

    private SafetensorsFormatException refused(Path file, String... fragments) {
        SafetensorsFormatException e = assertThrows(SafetensorsFormatException.class, () -> SafetensorsHeader.read(file));
        assertTrue(e.getMessage().startsWith(file.toString() + ": "), "names the file: " + e.getMessage());
        for (String f : fragments) {
            assertTrue(e.getMessage().contains(f), "expected '" + f + "' in: " + e.getMessage());
        }
        assertEquals(file, e.file());
        return e;
    }

    private Path header(String json, int data) {
        return Crafted.file(tmp, "model.safetensors", json, data);
    }

    @Test
    void validCraftedFileIsAccepted() {
        SafetensorsHeader h = SafetensorsHeader.read(header("{" + A + "," + B + ",\"__metadata__\":{\"k\":\"v\"}}", 12));
        assertEquals(2, h.tensors().size());
        assertEquals("v", h.metadata().get("k"));
        assertEquals(8, h.tensor("b").begin());
    }

    @Test
    void fileShorterThanEightBytes() {
        refused(Crafted.bytes(tmp, "short.safetensors", new byte[] {1, 2, 3, 4, 5}), "5 bytes long", "shorter than the 8-byte");
    }

    @Test
    void headerLengthOverTheLimitIsRefusedBeforeAllocating() {
        refused(Crafted.bytes(tmp, "big.safetensors", Crafted.concat(Crafted.prefix(100_000_001L), new byte[16])),
                "header length 100000001", "over the limit of 100000000");
        refused(Crafted.bytes(tmp, "huge.safetensors", Crafted.concat(Crafted.prefix(-1L), new byte[16])),
                "header length 18446744073709551615", "over the limit");
    }

    @Test
    void headerLengthRunningPastTheEnd() {
        refused(Crafted.bytes(tmp, "past.safetensors", Crafted.concat(Crafted.prefix(1000), "{}".getBytes(StandardCharsets.UTF_8))),
                "header length 1000 runs past the end", "10 bytes");
    }

    @Test
    void headerNotUtf8() {
        byte[] json = Crafted.concat("{\"".getBytes(StandardCharsets.UTF_8), new byte[] {(byte) 0xC3, 0x28},
                "\":{}}".getBytes(StandardCharsets.UTF_8));
        refused(Crafted.bytes(tmp, "utf.safetensors", Crafted.concat(Crafted.prefix(json.length), json)), "not valid UTF-8");
    }

    @Test
    void headerNotJsonOrNotAnObject() {
        refused(header("{\"a\": ", 0), "not valid JSON");
        refused(header("{} trailing", 0), "not valid JSON");
        refused(header("[1, 2]", 0), "header is a JSON array, expected an object");
        refused(header("\"text\"", 0), "header is a JSON string");
        refused(header("", 0), "not valid JSON");
    }

    @Test
    void duplicateKey() {
        refused(header("{" + A + "," + A + "}", 8), "not valid JSON", "Duplicate field 'a'");
    }

    @Test
    void entryMissingAField() {
        refused(header("{\"a\":{\"shape\":[2],\"data_offsets\":[0,8]}}", 8), "tensor 'a' has no field 'dtype'");
        refused(header("{\"a\":{\"dtype\":\"F32\",\"data_offsets\":[0,8]}}", 8), "tensor 'a' has no field 'shape'");
        refused(header("{\"a\":{\"dtype\":\"F32\",\"shape\":[2]}}", 8), "tensor 'a' has no field 'data_offsets'");
        refused(header("{\"a\":[1]}", 8), "tensor 'a' is a JSON array");
        refused(header("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8],\"x\":1}}", 8), "unknown field 'x'");
        refused(header("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0]}}", 8), "'data_offsets' must be an array [begin, end]");
        refused(header("{\"a\":{\"dtype\":\"F32\",\"shape\":2,\"data_offsets\":[0,8]}}", 8), "field 'shape' is not an array");
    }

    @Test
    void unknownDtypeNamesTheSupportedOnes() {
        refused(header("{\"a\":{\"dtype\":\"F8_E4M3\",\"shape\":[2],\"data_offsets\":[0,2]}}", 2),
                "tensor 'a': field 'dtype' has unknown dtype \"F8_E4M3\"", "F32", "BF16");
        refused(header("{\"a\":{\"dtype\":\"f32\",\"shape\":[2],\"data_offsets\":[0,8]}}", 8), "unknown dtype \"f32\"");
        refused(header("{\"a\":{\"dtype\":7,\"shape\":[2],\"data_offsets\":[0,8]}}", 8), "field 'dtype' is not a string");
    }

    @Test
    void negativeOrNonIntegerDimension() {
        refused(header("{\"a\":{\"dtype\":\"F32\",\"shape\":[2,-3],\"data_offsets\":[0,8]}}", 8),
                "tensor 'a': field 'shape' dimension 1 is negative (-3)");
        refused(header("{\"a\":{\"dtype\":\"F32\",\"shape\":[1.5],\"data_offsets\":[0,8]}}", 8), "dimension 0 is not an integer");
        refused(header("{\"a\":{\"dtype\":\"F32\",\"shape\":[99999999999999999999],\"data_offsets\":[0,8]}}", 8),
                "more than fits in 64 bits");
    }

    @Test
    void shapeWhoseElementCountOrByteCountOverflows() {
        refused(header("{\"a\":{\"dtype\":\"F32\",\"shape\":[4294967296,4294967296],\"data_offsets\":[0,8]}}", 8),
                "tensor 'a': field 'shape'", "more elements than fit in a long");
        refused(header("{\"a\":{\"dtype\":\"F32\",\"shape\":[4611686018427387904],\"data_offsets\":[0,8]}}", 8),
                "tensor 'a': field 'shape'", "more bytes than fit in a long");
    }

    @Test
    void endBeforeBegin() {
        refused(header("{\"a\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[8,0]}}", 8),
                "tensor 'a': field 'data_offsets' end 0 is before begin 8");
    }

    @Test
    void byteLengthDifferentFromElementsTimesDtypeSize() {
        refused(header("{\"a\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[0,8]}}", 8),
                "tensor 'a': field 'data_offsets' spans 8 bytes, expected 12");
    }

    @Test
    void offsetsNotStartingAtZero() {
        refused(header("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[4,12]}}", 12),
                "tensor 'a'", "leaves a gap of 4 bytes after the start of the data region");
    }

    @Test
    void offsetsLeavingAGap() {
        refused(header("{" + A + ",\"b\":{\"dtype\":\"I8\",\"shape\":[4],\"data_offsets\":[10,14]}}", 14),
                "tensor 'b'", "gap of 2 bytes after tensor 'a'");
    }

    @Test
    void offsetsOverlapping() {
        refused(header("{" + A + ",\"b\":{\"dtype\":\"I8\",\"shape\":[4],\"data_offsets\":[6,10]}}", 10),
                "tensor 'b'", "overlaps by 2 bytes with tensor 'a'");
    }

    @Test
    void lastEndDifferentFromTheDataRegion() {
        refused(header("{" + A + "," + B + "}", 11), "tensor data ends at 12 but the data region is 11", "truncated");
        refused(header("{" + A + "," + B + "}", 13), "data region is 13", "trailing bytes");
        refused(header("{}", 4), "tensor data ends at 0 but the data region is 4");
    }

    @Test
    void metadataThatIsNotAStringMap() {
        refused(header("{\"__metadata__\":{\"k\":1}}", 0), "field '__metadata__.k' is a JSON number, expected a string");
        refused(header("{\"__metadata__\":[\"k\"]}", 0), "field '__metadata__' is a JSON array");
    }

    @Test
    void emptyTensorName() {
        refused(header("{\"\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", 8), "empty name");
    }

    @Test
    void deeplyNestedJsonIsRefusedWithoutOverflowingTheStack() {
        refused(header("{\"a\":" + "[".repeat(100_000) + "]".repeat(100_000) + "}", 0), "not valid JSON");
    }
}
