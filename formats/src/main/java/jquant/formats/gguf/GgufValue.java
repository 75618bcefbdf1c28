package jquant.formats.gguf;

import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * One GGUF metadata value with its exact on-disk type, so a file can be written back unchanged.
 * Java representation by type: every integer type as {@link Long} (UINT64 as its two's-complement bit
 * pattern), FLOAT32 as {@link Float}, FLOAT64 as {@link Double}, BOOL as {@link Boolean}, STRING as
 * {@link String}, ARRAY as {@link GgufArray}.
 */
public record GgufValue(GgufType type, Object value) {

    /** A typed array; nested arrays are arrays whose element type is ARRAY. */
    public record GgufArray(GgufType elementType, List<GgufValue> elements) {
        public GgufArray {
            elements = List.copyOf(elements);
            for (GgufValue e : elements) {
                if (e.type() != elementType) {
                    throw new IllegalArgumentException("array of " + elementType + " holds a " + e.type());
                }
            }
        }
    }

    public GgufValue {
        Objects.requireNonNull(type);
        Objects.requireNonNull(value);
        Class<?> expected = switch (type) {
            case FLOAT32 -> Float.class;
            case FLOAT64 -> Double.class;
            case BOOL -> Boolean.class;
            case STRING -> String.class;
            case ARRAY -> GgufArray.class;
            default -> Long.class;
        };
        if (!expected.isInstance(value)) {
            throw new IllegalArgumentException(type + " value must be a " + expected.getSimpleName() + ", got " + value.getClass().getSimpleName());
        }
        if (type.isInteger() && type != GgufType.UINT64 && type != GgufType.INT64) {
            long v = (Long) value;
            long min = switch (type) { case INT8 -> Byte.MIN_VALUE; case INT16 -> Short.MIN_VALUE; case INT32 -> Integer.MIN_VALUE; default -> 0; };
            long max = switch (type) {
                case UINT8 -> 0xFFL; case INT8 -> Byte.MAX_VALUE; case UINT16 -> 0xFFFFL; case INT16 -> Short.MAX_VALUE;
                case UINT32 -> 0xFFFF_FFFFL; default -> Integer.MAX_VALUE;
            };
            if (v < min || v > max) throw new IllegalArgumentException(v + " is out of range for " + type);
        }
    }

    public static GgufValue of(GgufType integerType, long v) { return new GgufValue(integerType, v); }

    public static GgufValue uint32(long v) { return new GgufValue(GgufType.UINT32, v); }

    public static GgufValue int32(int v) { return new GgufValue(GgufType.INT32, (long) v); }

    public static GgufValue float32(float v) { return new GgufValue(GgufType.FLOAT32, v); }

    public static GgufValue bool(boolean v) { return new GgufValue(GgufType.BOOL, v); }

    public static GgufValue string(String v) { return new GgufValue(GgufType.STRING, v); }

    public static GgufValue array(GgufType elementType, List<GgufValue> elements) {
        return new GgufValue(GgufType.ARRAY, new GgufArray(elementType, elements));
    }

    public static GgufValue stringArray(List<String> strings) {
        return array(GgufType.STRING, strings.stream().map(GgufValue::string).toList());
    }

    /** Any integer type, as a long (UINT64 as its bit pattern). */
    public long asLong() {
        if (!type.isInteger()) throw new IllegalStateException("GGUF value is " + type + ", not an integer");
        return (Long) value;
    }

    /** Any integer type that fits an int. */
    public int asInt() {
        long v = asLong();
        if (type == GgufType.UINT64 && v < 0 || v != (int) v) {
            throw new IllegalStateException("GGUF " + type + " value " + Long.toUnsignedString(v) + " does not fit an int");
        }
        return (int) v;
    }

    /** FLOAT32, FLOAT64 or an integer type, as a float. */
    public float asFloat() {
        return switch (type) {
            case FLOAT32 -> (Float) value;
            case FLOAT64 -> ((Double) value).floatValue();
            default -> asLong();
        };
    }

    /** FLOAT64 or FLOAT32, as a double. */
    public double asDouble() {
        return switch (type) {
            case FLOAT64 -> (Double) value;
            case FLOAT32 -> (Float) value;
            default -> throw new IllegalStateException("GGUF value is " + type + ", not a float");
        };
    }

    public boolean asBoolean() {
        if (type != GgufType.BOOL) throw new IllegalStateException("GGUF value is " + type + ", not BOOL");
        return (Boolean) value;
    }

    public String asString() {
        if (type != GgufType.STRING) throw new IllegalStateException("GGUF value is " + type + ", not STRING");
        return (String) value;
    }

    public GgufArray asArray() {
        if (type != GgufType.ARRAY) throw new IllegalStateException("GGUF value is " + type + ", not ARRAY");
        return (GgufArray) value;
    }

    /** Plain Java form for display: arrays become lists, UINT64 above Long.MAX_VALUE a decimal string. */
    public Object toJava() {
        if (type == GgufType.ARRAY) {
            List<Object> out = new ArrayList<>();
            for (GgufValue e : asArray().elements()) out.add(e.toJava());
            return out;
        }
        if (type == GgufType.UINT64 && (Long) value < 0) return Long.toUnsignedString((Long) value);
        return value;
    }
}
