package jquant.runtime;

import java.util.HashMap;
import java.util.Map;
import java.util.function.Function;

/**
 * One token's input to several products ({@link SharedInputProducts}), and the forms the products
 * convert it to (an int8 column quantized per block, arranged for a layout's kernel), each made once
 * and shared by every product that asks for the same form.
 */
public final class SharedInput {

    private final float[] values;
    private final int length;
    private final Map<Object, Object> forms = new HashMap<>(4);

    /** The first {@code length} floats of {@code values}, which must not change while products are prepared and run. */
    SharedInput(float[] values, int length) {
        this.values = values;
        this.length = length;
    }

    /** The input: its first {@link #length} floats. */
    public float[] values() {
        return values;
    }

    public int length() {
        return length;
    }

    /** The form {@code key} names (its own equality: a layout, a quantization kind), made by {@code make} from the input the first time. */
    @SuppressWarnings("unchecked")
    public <T> T form(Object key, Function<float[], T> make) {
        return (T) forms.computeIfAbsent(key, k -> make.apply(values));
    }
}
