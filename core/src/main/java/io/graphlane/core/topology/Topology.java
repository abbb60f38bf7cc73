package io.graphlane.core.topology;

import java.util.ArrayList;
import java.util.List;

/**
 * The parallel layout of ranks over four axes: data (D), pipeline (P), tensor (T) and
 * expert (E), each of size at least 1. A rank's coordinates and its subgroups are derived:
 * {@code rank = ((data·P + pipeline)·T + tensor)·E + expert}.
 */
public record Topology(int data, int pipeline, int tensor, int expert) {

    /** One axis of the layout. */
    public enum Axis { DATA, PIPELINE, TENSOR, EXPERT }

    /** A rank's position on each axis. */
    public record Coordinates(int data, int pipeline, int tensor, int expert) {
        public int get(Axis axis) {
            return switch (axis) {
                case DATA -> data;
                case PIPELINE -> pipeline;
                case TENSOR -> tensor;
                case EXPERT -> expert;
            };
        }
    }

    public Topology {
        check("data", data);
        check("pipeline", pipeline);
        check("tensor", tensor);
        check("expert", expert);
        long world = (long) data * pipeline * tensor * expert;
        if (world > Integer.MAX_VALUE) {
            throw new IllegalArgumentException("topology D=" + data + " P=" + pipeline + " T=" + tensor + " E=" + expert + " has more ranks than fit in an int");
        }
    }

    private static void check(String axis, int size) {
        if (size < 1) {
            throw new IllegalArgumentException(axis + " axis size must be >= 1, got " + size);
        }
    }

    public int size(Axis axis) {
        return switch (axis) {
            case DATA -> data;
            case PIPELINE -> pipeline;
            case TENSOR -> tensor;
            case EXPERT -> expert;
        };
    }

    /** The number of ranks. */
    public int worldSize() {
        return data * pipeline * tensor * expert;
    }

    public int rank(Coordinates c) {
        for (Axis axis : Axis.values()) {
            int v = c.get(axis);
            if (v < 0 || v >= size(axis)) {
                throw new IllegalArgumentException(axis.name().toLowerCase() + " coordinate " + v + " is outside [0, " + size(axis) + ")");
            }
        }
        return ((c.data() * pipeline + c.pipeline()) * tensor + c.tensor()) * expert + c.expert();
    }

    public Coordinates coordinates(int rank) {
        if (rank < 0 || rank >= worldSize()) {
            throw new IllegalArgumentException("rank " + rank + " is outside [0, " + worldSize() + ") for " + this);
        }
        int expertC = rank % expert;
        int rest = rank / expert;
        int tensorC = rest % tensor;
        rest /= tensor;
        int pipelineC = rest % pipeline;
        int dataC = rest / pipeline;
        return new Coordinates(dataC, pipelineC, tensorC, expertC);
    }

    /** The ranks that differ from {@code rank} only on {@code axis}, in coordinate order ({@code rank} included). */
    public List<Integer> group(int rank, Axis axis) {
        Coordinates c = coordinates(rank);
        List<Integer> ranks = new ArrayList<>(size(axis));
        for (int i = 0; i < size(axis); i++) {
            ranks.add(rank(new Coordinates(
                    axis == Axis.DATA ? i : c.data(),
                    axis == Axis.PIPELINE ? i : c.pipeline(),
                    axis == Axis.TENSOR ? i : c.tensor(),
                    axis == Axis.EXPERT ? i : c.expert())));
        }
        return ranks;
    }

    @Override
    public String toString() {
        return "D=" + data + " P=" + pipeline + " T=" + tensor + " E=" + expert;
    }
}
