package jquant.runtime;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import jquant.formats.DType;
import jquant.formats.Tensor;
import jquant.runtime.kernels.MatmulKernels;
import jquant.runtime.kernels.NonFiniteWeightException;

/**
 * A float32, float16 or bfloat16 matrix multiplied where it lies (usually the mapped file): each
 * weight is converted to float32 in a register as it is used (float16 exactly, bfloat16 by a shift),
 * so the model needs no memory beyond the file's pages.
 *
 * <p>Float16 decode multiplies activations scaled by {@link MatmulKernels#F16_INPUT_SCALE} (the
 * kernel's conversion leaves its 2^-112 in the weight); a token with an activation too large to scale
 * takes the prefill path, which converts the weights fully and gives the same bits. Because that
 * conversion cannot see infinities or NaNs, every float16 weight is checked once, before the first
 * product (a scan at memory speed, the pages the product reads next).
 */
public final class DenseWeights extends RowMajorWeights {
    private static final ValueLayout.OfFloat F32 = ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    /** Decode reads rows whole up to this many columns, longer rows in calls of {@link #DECODE_CHUNK} ({@link #decodeChunk}). */
    private static final int WHOLE_ROWS_UP_TO = 4096, DECODE_CHUNK = 2048;

    private final MemorySegment data;
    private final DType type;
    private final long rowBytes;
    /** For float16: whether every weight has been checked finite. */
    private volatile boolean checked;

    /** {@code data}: {@code out} rows of {@code in} elements of {@code type}, little-endian, off-heap (native or mapped). */
    public DenseWeights(String name, MemorySegment data, DType type, int out, int in, Compute compute) {
        super(name, out, in, compute);
        if (!supports(type)) throw new IllegalArgumentException(name + ": " + type + " is not a dense float type");
        if (!data.isNative()) throw new IllegalArgumentException(name + ": in-place weights must be off-heap (a mapped file)");
        this.rowBytes = (long) in * type.byteSize(1, 1);
        if (data.byteSize() != rowBytes * out) {
            throw new IllegalArgumentException(name + ": " + out + "×" + in + " " + type + " needs " + rowBytes * out + " bytes, has " + data.byteSize());
        }
        this.data = data;
        this.type = type;
        KernelWarmup.startDense(type, data);
    }

    public DenseWeights(Tensor tensor, Compute compute) {
        this(tensor.name(), tensor.data(), tensor.dtype(), tensor.rows(), tensor.cols(), compute);
    }

    /** True for the element types these weights run in place: F32, F16, BF16. */
    public static boolean supports(DType type) {
        return type == DType.F32 || type == DType.F16 || type == DType.BF16;
    }

    /** Before the first product of either path: the float16 kernels' conversion cannot see ±inf or NaN. */
    @Override
    float[] prepare(float[] x, int n, Scratch s) {
        if (type == DType.F16 && !checked) requireFinite();
        return x;
    }

    private synchronized void requireFinite() {
        if (checked) return;
        compute.pool().forRange(out, in, (worker, r0, r1) -> {
            for (int r = r0; r < r1; r++) NonFiniteWeightException.requireFiniteF16(data, r * rowBytes, in, r);
        });
        checked = true;
    }

    @Override
    float[] decodeInput(float[] x, int n, Scratch s) {
        if (type != DType.F16) return x;
        float[] scaled = s.input(n * in);
        for (int i = 0; i < n * in; i++) {
            if (!(Math.abs(x[i]) < MatmulKernels.F16_INPUT_LIMIT)) return null;
            scaled[i] = x[i] * MatmulKernels.F16_INPUT_SCALE;
        }
        return scaled;
    }

    /**
     * Columns per row-kernel call in decode: whole rows up to {@value #WHOLE_ROWS_UP_TO} columns,
     * {@value #DECODE_CHUNK} beyond, the sizes at which the kernel read fastest (bench/RESULTS.md).
     */
    @Override
    int decodeChunk() {
        return in <= WHOLE_ROWS_UP_TO ? in : DECODE_CHUNK;
    }

    /** Dense rows are read at memory speed: four long streams ({@link RowMajorWeights#spreadRows}). */
    @Override
    boolean spreadRows() {
        return true;
    }

    @Override
    void dotRows(MatmulKernels k, int r0, int r1, int r2, int r3, float[] x, int xOff, int k0, int k1, float[] acc, Scratch s) {
        switch (type) {
            case F32 -> k.rowsF32(data, r0 * rowBytes, r1 * rowBytes, r2 * rowBytes, r3 * rowBytes, x, xOff, k0, k1, acc);
            case F16 -> k.rowsF16(data, r0 * rowBytes, r1 * rowBytes, r2 * rowBytes, r3 * rowBytes, x, xOff, k0, k1, acc);
            default -> k.rowsBF16(data, r0 * rowBytes, r1 * rowBytes, r2 * rowBytes, r3 * rowBytes, x, xOff, k0, k1, acc);
        }
    }

    @Override
    void decodeRows(int r0, int count, int k0, int k1, float[] dst, Scratch s) {
        int width = k1 - k0;
        for (int i = 0; i < count; i++) {
            long at = (r0 + i) * rowBytes;
            switch (type) {
                case F32 -> MemorySegment.copy(data, F32, at + 4L * k0, dst, i * width, width);
                case F16 -> compute.matmul().f16ToFloats(data, at + 2L * k0, dst, i * width, width);
                default -> compute.matmul().bf16ToFloats(data, at + 2L * k0, dst, i * width, width);
            }
        }
    }

    @Override
    public long storedBytes() {
        return data.byteSize();
    }

    @Override
    float output(int r, float dot) {
        return dot;
    }
}
