package io.graphlane.inference.offload;

import io.graphlane.inference.llama.LayerWeights;
import java.lang.reflect.Constructor;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.RecordComponent;
import java.util.ArrayList;
import java.util.List;
import java.util.function.BiFunction;

/**
 * The tensors of a {@link LayerWeights} record, whatever components it has: read in component order, and replaced
 * one by one to make the same layer over other tensors (its device copy). Components that are not tensors of the
 * backend (null, or of another type) are kept as they are.
 */
final class LayerTensors {
    private static final RecordComponent[] COMPONENTS = LayerWeights.class.getRecordComponents();
    private static final Constructor<?> CANONICAL;

    static {
        Class<?>[] types = new Class<?>[COMPONENTS.length];
        for (int i = 0; i < COMPONENTS.length; i++) {
            types[i] = COMPONENTS[i].getType();
        }
        try {
            CANONICAL = LayerWeights.class.getDeclaredConstructor(types);
        } catch (NoSuchMethodException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    private LayerTensors() {
    }

    /** The components of {@code layer} that are instances of {@code type}, in component order. */
    static <T> List<T> of(LayerWeights<?> layer, Class<T> type) {
        List<T> out = new ArrayList<>();
        for (RecordComponent c : COMPONENTS) {
            Object v = read(c, layer);
            if (type.isInstance(v)) {
                out.add(type.cast(v));
            }
        }
        return out;
    }

    /** {@code layer} with each component that is a {@code type} replaced by {@code replace(component name, tensor)}. */
    @SuppressWarnings("unchecked")
    static <T> LayerWeights<T> map(LayerWeights<T> layer, Class<T> type, BiFunction<String, T, T> replace) {
        Object[] args = new Object[COMPONENTS.length];
        for (int i = 0; i < COMPONENTS.length; i++) {
            Object v = read(COMPONENTS[i], layer);
            args[i] = type.isInstance(v) ? replace.apply(COMPONENTS[i].getName(), type.cast(v)) : v;
        }
        try {
            return (LayerWeights<T>) CANONICAL.newInstance(args);
        } catch (InvocationTargetException e) {
            throw e.getCause() instanceof RuntimeException r ? r : new IllegalStateException(e.getCause());
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException("cannot rebuild a layer's weights: " + e, e);
        }
    }

    private static Object read(RecordComponent c, LayerWeights<?> layer) {
        try {
            return c.getAccessor().invoke(layer);
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException("cannot read " + c.getName() + " of a layer's weights: " + e, e);
        }
    }
}
