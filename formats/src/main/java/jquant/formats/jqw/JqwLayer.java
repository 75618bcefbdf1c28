package jquant.formats.jqw;

import java.util.List;

/**
 * A contiguous run of the file holding every tensor one stage of the model needs ({@code embedding},
 * {@code layer.N}, {@code head}), so that loading it is one read, with its CRC-32C.
 */
public record JqwLayer(String name, long offset, long length, long crc32c, List<JqwTensor> tensors) {
    public JqwLayer {
        tensors = List.copyOf(tensors);
    }
}
