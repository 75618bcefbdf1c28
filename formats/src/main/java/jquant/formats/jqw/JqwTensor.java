package jquant.formats.jqw;

import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * One tensor of a packed file: its name, encoding, logical shape, and the byte ranges ("parts") that
 * hold it. What the parts mean is the encoding's business (for example {@code weightlet}: scales,
 * widths, data); the container only guarantees that each part is 64-byte aligned and lies inside its
 * layer.
 *
 * @param name     canonical tensor name ({@code blk.3.ffn_up})
 * @param encoding how the parts encode the values ({@code f32}, {@code weightlet}, …)
 * @param shape    row-major logical shape
 * @param parts    part name to {@code [absolute offset, length]} in the file
 * @param attrs    small encoding-specific values (static activation scale, smoothing factor, …)
 */
public record JqwTensor(String name, String encoding, long[] shape, Map<String, long[]> parts, Map<String, Object> attrs) {
    public JqwTensor {
        shape = shape.clone();
        // insertion-ordered copies: Map.copyOf iterates in a per-JVM random order, and the metadata
        // JSON must come out the same bytes on every run
        parts = Collections.unmodifiableMap(new LinkedHashMap<>(parts));
        attrs = attrs == null ? Map.of() : Collections.unmodifiableMap(new LinkedHashMap<>(attrs));
    }

    /** Whether the tensor has a part of this name. */
    public boolean hasPart(String part) {
        return parts.containsKey(part);
    }

    public long[] part(String part) {
        long[] p = parts.get(part);
        if (p == null) throw new IllegalStateException(name + " (" + encoding + ") has no part '" + part + "'");
        return p;
    }
}
