package jquant.formats.jqw;

import jquant.formats.jqw.JqwFile;
import jquant.formats.jqw.JqwTensor;
import jquant.formats.weightlet.ChannelBitWidths;
import jquant.formats.weightlet.PackedTensor;
import jquant.formats.weightlet.ScalarWeightletUnpacker;
import jquant.formats.weightlet.WeightletLayout;
import jquant.formats.weightlet.WeightletPacker;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The tensor encodings of a jquant packed model file ({@code docs/jqw-format.md}, "Tensor
 * encodings"):
 * <pre>
 * f32        part data    rows·cols float32, little-endian, row-major
 * f16        part data    rows·cols IEEE float16 (rounded to nearest even), little-endian, row-major
 * weightlet  part scales  one float32 per output channel (little-endian): w ≈ scale · int8
 *            part widths  {@link ChannelBitWidths}: 3-bit codes B − 1, ceil(3·rows/8) bytes
 *            part data    the channels in the {@link WeightletLayout} format, back to back
 *                         (channel c starts at Σ_{c' &lt; c} channelBytes(B_c', cols))
 * </pre>
 * Every part starts 64-byte aligned (the container's rule). Files of version 1 stored every channel's
 * last group whole (padded with zero fields); where that differs, rows whose length is not a multiple of
 * 128, such a tensor is repacked on reading (small models only: the rows of real ones are whole groups).
 */
public final class TensorEncoding {
    public static final String F32 = "f32";
    public static final String F16 = "f16";
    public static final String WEIGHTLET = "weightlet";
    public static final String DATA = "data";
    public static final String SCALES = "scales";
    public static final String WIDTHS = "widths";
    /** Attribute: the static per-tensor int8 scale of this linear layer's (smoothed) input. */
    public static final String INPUT_SCALE = "inputScale";
    /** Attribute: the static per-tensor int8 scale of this linear layer's smoothed output {@code o / S_O'^β}. */
    public static final String OUTPUT_SCALE = "outputScale";
    /**
     * Attribute of a tensor kept out of the plan ({@code pack --keep}) but stored as 8-bit weightlets
     * ({@code --keep-type q8}): its value is "q8". Such a tensor has no static activation scales and
     * runs weight-only in every mode.
     */
    public static final String KEPT = "kept";
    /** Attribute: α of the smoothing group this linear layer belongs to. */
    public static final String ALPHA = "alpha";

    private static final ValueLayout.OfFloat F32_LE = ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    private TensorEncoding() {}

    /** The parts of one tensor as they go into (or must be found in) the file, in file order. */
    public record Parts(String encoding, Map<String, ByteBuffer> bytes) {
        public Parts {
            bytes = java.util.Collections.unmodifiableMap(new LinkedHashMap<>(bytes));
        }
    }

    public static Parts f32(float[] values) {
        ByteBuffer b = ByteBuffer.allocate(Math.multiplyExact(values.length, Float.BYTES)).order(ByteOrder.LITTLE_ENDIAN);
        b.asFloatBuffer().put(values);
        return new Parts(F32, Map.of(DATA, b));
    }

    /** Values rounded to float16 (round to nearest even). */
    public static Parts f16(float[] values) {
        ByteBuffer b = ByteBuffer.allocate(Math.multiplyExact(values.length, 2)).order(ByteOrder.LITTLE_ENDIAN);
        for (float v : values) b.putShort(Float.floatToFloat16(v));
        b.flip();
        return new Parts(F16, Map.of(DATA, b));
    }

    /**
     * Packs a quantized row-major {@code rows × cols} matrix: int8 grid levels {@code values}, row r on the
     * {@code bits[r]}-bit grid with dequantization scale {@code scales[r]}.
     */
    public static Parts weightlet(int rows, int cols, byte[] bits, byte[] values, float[] scales) {
        if (bits.length != rows || scales.length != rows || values.length != (long) rows * cols) {
            throw new IllegalArgumentException(rows + "×" + cols + " weightlet tensor with " + bits.length + " widths, "
                    + scales.length + " scales and " + values.length + " values");
        }
        byte[] fields = new byte[values.length];
        int[] widths = new int[rows];
        for (int r = 0; r < rows; r++) {
            widths[r] = bits[r];
            for (int j = 0; j < cols; j++) fields[r * cols + j] = (byte) WeightletLayout.toField(values[r * cols + j], bits[r]);
        }
        PackedTensor packed = PackedTensor.pack(WeightletPacker.INSTANCE, fields, rows, cols, widths);
        ByteBuffer scaleBytes = ByteBuffer.allocate(rows * Float.BYTES).order(ByteOrder.LITTLE_ENDIAN);
        scaleBytes.asFloatBuffer().put(scales);
        Map<String, ByteBuffer> parts = new LinkedHashMap<>();
        parts.put(SCALES, scaleBytes);
        parts.put(WIDTHS, ByteBuffer.wrap(ChannelBitWidths.encode(widths)));
        parts.put(DATA, packed.data().asByteBuffer());
        return new Parts(WEIGHTLET, parts);
    }

    /** A weightlet tensor read back: widths, scales and the packed channels (a view of the mapping). */
    public record Weightlet(int rows, int cols, float[] scales, PackedTensor packed) {}

    /** Reads a {@code weightlet} tensor, checking every part's size against its shape. */
    public static Weightlet readWeightlet(JqwFile file, JqwTensor t) {
        if (!WEIGHTLET.equals(t.encoding())) throw new IllegalArgumentException(t.name() + " is " + t.encoding() + ", not " + WEIGHTLET);
        int[] shape = matrixShape(t);
        int rows = shape[0], cols = shape[1];
        int[] bits = ChannelBitWidths.decode(file.part(t, WIDTHS).toArray(ValueLayout.JAVA_BYTE), rows);
        MemorySegment scalesPart = file.part(t, SCALES);
        if (scalesPart.byteSize() != (long) rows * Float.BYTES) {
            throw new IllegalArgumentException(t.name() + ": scales part has " + scalesPart.byteSize() + " bytes for " + rows + " channels");
        }
        float[] scales = new float[rows];
        for (int r = 0; r < rows; r++) scales[r] = scalesPart.getAtIndex(F32_LE, r);
        // version 1 stored each row's last group whole: the layout of a row padded to whole groups
        int stored = file.version() == 1 ? WeightletLayout.groups(cols) * WeightletLayout.GROUP_WEIGHTS : cols;
        long[] offsets = new long[rows + 1];
        for (int r = 0; r < rows; r++) offsets[r + 1] = offsets[r] + WeightletLayout.channelBytes(bits[r], stored);
        MemorySegment data = file.part(t, DATA);
        if (data.byteSize() != offsets[rows]) {
            throw new IllegalArgumentException(t.name() + ": data part has " + data.byteSize() + " bytes, its widths need " + offsets[rows]);
        }
        PackedTensor packed = new PackedTensor(rows, stored, bits, offsets, data);
        return new Weightlet(rows, cols, scales, stored == cols ? packed : withoutPadding(packed, cols));
    }

    /** A tensor stored with padded rows, repacked with rows of {@code cols} weights. */
    private static PackedTensor withoutPadding(PackedTensor padded, int cols) {
        int rows = padded.channels(), stored = padded.length();
        byte[] codes = ScalarWeightletUnpacker.INSTANCE.unpackTensor(padded);
        byte[] fields = new byte[Math.multiplyExact(rows, cols)];
        for (int r = 0; r < rows; r++) {
            for (int j = 0; j < cols; j++) fields[r * cols + j] = (byte) WeightletLayout.toField(codes[r * stored + j], padded.bits(r));
        }
        return PackedTensor.pack(WeightletPacker.INSTANCE, fields, rows, cols, padded.bits());
    }

    /** Reads an {@code f32} tensor. */
    public static float[] readF32(JqwFile file, JqwTensor t) {
        if (!F32.equals(t.encoding())) throw new IllegalArgumentException(t.name() + " is " + t.encoding() + ", not " + F32);
        long n = 1;
        for (long d : t.shape()) n = Math.multiplyExact(n, d);
        MemorySegment data = file.part(t, DATA);
        if (data.byteSize() != n * Float.BYTES) {
            throw new IllegalArgumentException(t.name() + ": data part has " + data.byteSize() + " bytes for " + n + " floats");
        }
        float[] out = new float[Math.toIntExact(n)];
        MemorySegment.copy(data, F32_LE, 0, out, 0, out.length);
        return out;
    }

    /** {@code [rows, cols]} of a matrix tensor, both positive ints. */
    public static int[] matrixShape(JqwTensor t) {
        long[] s = t.shape();
        if (s.length != 2 || s[0] <= 0 || s[1] <= 0 || s[0] > Integer.MAX_VALUE || s[1] > Integer.MAX_VALUE) {
            throw new IllegalArgumentException(t.name() + ": shape " + java.util.Arrays.toString(s) + " is not a matrix [out, in]");
        }
        return new int[]{(int) s[0], (int) s[1]};
    }
}
