package jquant.runtime;

import java.util.HashMap;
import java.util.Map;
import java.util.function.Function;

/**
 * One input to several products ({@link SharedInputProducts}): a token, or a prefill batch of tokens;
 * and the forms the products convert it to (an int8 column quantized per block, arranged for a
 * layout's kernel; a batch's aligned copy), each made once and shared by every product that asks for
 * the same form.
 */
public final class SharedInput {

    private final float[] values;
    private final int length;
    private final int tokens;
    private final Map<Object, Object> forms = new HashMap<>(4);

    /** One token: the first {@code length} floats of {@code values}, which must not change while products are prepared and run. */
    SharedInput(float[] values, int length) {
        this(values, length, 1);
    }

    /** {@code tokens} rows of {@code length} floats from the start of {@code values}, which must not change while products are prepared and run. */
    SharedInput(float[] values, int length, int tokens) {
        this.values = values;
        this.length = length;
        this.tokens = tokens;
    }

    /** The input: its first {@link #tokens} rows of {@link #length} floats. */
    public float[] values() {
        return values;
    }

    /** Floats a token. */
    public int length() {
        return length;
    }

    /** Tokens in the input: one in decode. */
    public int tokens() {
        return tokens;
    }

    /** The form {@code key} names (its own equality: a layout, a quantization kind), made by {@code make} from the input the first time. */
    @SuppressWarnings("unchecked")
    public <T> T form(Object key, Function<float[], T> make) {
        return (T) forms.computeIfAbsent(key, k -> make.apply(values));
    }
}
