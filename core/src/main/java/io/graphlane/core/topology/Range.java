package io.graphlane.core.topology;

/** A half-open range {@code [start, end)} of items (layers, experts, rows). */
public record Range(int start, int end) {
    public Range {
        if (start < 0 || end < start) {
            throw new IllegalArgumentException("invalid range [" + start + ", " + end + ")");
        }
    }

    public int size() {
        return end - start;
    }

    public boolean contains(int i) {
        return i >= start && i < end;
    }

    /**
     * Part {@code index} of {@code total} items split into {@code parts} balanced contiguous ranges:
     * the first {@code total % parts} parts get one extra item.
     *
     * @throws IllegalArgumentException if parts is 0 or less, index is outside [0, parts), or total is less than parts
     */
    public static Range balanced(int total, int parts, int index) {
        if (parts <= 0) {
            throw new IllegalArgumentException("cannot split " + total + " items into " + parts + " parts: parts must be >= 1");
        }
        if (index < 0 || index >= parts) {
            throw new IllegalArgumentException("part index " + index + " is outside [0, " + parts + ")");
        }
        if (total < parts) {
            throw new IllegalArgumentException("cannot split " + total + " items into " + parts + " non-empty parts: need at least " + parts + " items");
        }
        int base = total / parts;
        int extra = total % parts;
        int start = index * base + Math.min(index, extra);
        int size = base + (index < extra ? 1 : 0);
        return new Range(start, start + size);
    }

    @Override
    public String toString() {
        return "[" + start + ", " + end + ")";
    }
}
