package jquant.runtime.ggml;

import java.lang.foreign.MemorySegment;
import java.util.Optional;
import jquant.formats.DType;
import jquant.formats.Tensor;
import jquant.runtime.Compute;
import jquant.runtime.LinearWeights;
import jquant.runtime.LinearWeights.RowGroups;
import jquant.runtime.SharedInput;
import jquant.runtime.nativelib.KernelSource;
import jquant.runtime.nativelib.NativeKernels;
import jquant.runtime.nativelib.NativeKernels.RowType;

/**
 * A matrix of one of llama.cpp's block types (Q4_0, Q8_0, Q4_K, Q5_K, Q6_K) multiplied in place as
 * ggml-cpu multiplies it: each input column quantized once per product ({@link Q8Activations}), then
 * integer dot products per weight block and one float term per block ({@link BlockDots} defines them).
 * Decode and prefill share the arithmetic, so a token's outputs are the same alone and in a batch; a
 * batch's columns are quantized once and every row meets all of them. The C library's kernels run where
 * the process uses them ({@link KernelSource}), otherwise {@link JavaBlockKernels}; both give
 * {@link BlockDots}' floats bit for bit. ({@code --kernels float} decodes the weights to float32 instead.)
 */
public final class IntegerBlockWeights implements LinearWeights {

    private final Tensor tensor;
    private final DType type;
    private final Q8Activations.Kind kind;
    private final int out, in;
    private final long rowBytes;
    private final Compute compute;
    private final Optional<NativeKernels> kernels;
    private final RowType rowType;

    /** {@code tensor} (one of the types {@link #serves}) on {@code compute}'s pool, on the kernels {@code kernels} (empty: Java's). */
    public IntegerBlockWeights(Tensor tensor, Compute compute, Optional<NativeKernels> kernels) {
        if (!serves(tensor)) throw new IllegalArgumentException(tensor.name() + " (" + tensor.dtype() + ") has no integer block kernels");
        this.tensor = tensor;
        this.type = tensor.dtype();
        this.kind = BlockDots.activations(type);
        this.out = tensor.rows();
        this.in = tensor.cols();
        this.rowBytes = type.byteSize(in, in);
        this.compute = compute;
        this.kernels = kernels;
        this.rowType = RowType.valueOf(type.name());
    }

    /** On the kernels the process uses now ({@link KernelSource#kernels()}). */
    public IntegerBlockWeights(Tensor tensor, Compute compute) {
        this(tensor, compute, KernelSource.kernels());
    }

    /** Whether {@code tensor} is a matrix of a type with integer block kernels, stored off the heap (a mapped file's). */
    public static boolean serves(Tensor tensor) {
        return BlockDots.activations(tensor.dtype()) != null && tensor.data().isNative();
    }

    @Override public int inFeatures() { return in; }
    @Override public int outFeatures() { return out; }
    @Override public long storedBytes() { return tensor.byteSize(); }

    /** Which kernels multiply, for logs. */
    public String kernel() {
        return kernels.map(k -> k + " integer " + type + " × " + kind).orElse("Java integer " + type + " × " + kind);
    }

    @Override
    public void matmul(float[] x, int n, float[] y) {
        Q8Activations a = n == 1 ? Q8Activations.quantizeReused(kind, x, in) : Q8Activations.quantize(kind, x, n, in, compute.pool());
        if (kernels.isPresent()) {
            nativeGroups(a, n, y).runOn(compute.pool());
            return;
        }
        MemorySegment data = tensor.data();
        compute.pool().forRange((out + 3) / 4, 4L * in * n, (worker, start, end) ->
                JavaBlockKernels.rows(type, data, rowBytes, 4 * start, Math.min(out, 4 * end), a, y, out));
    }

    @Override
    public Optional<RowGroups> prepare(SharedInput x, float[] y) {
        if (x.tokens() != 1 || kernels.isEmpty()) return Optional.empty();
        return Optional.of(nativeGroups(x.form(kind, v -> Q8Activations.quantizeReused(kind, v, in)), 1, y));
    }

    /** The product with {@code a}'s {@code n} columns on the C library's kernels, one call per range of row groups. */
    private RowGroups nativeGroups(Q8Activations a, int n, float[] y) {
        NativeKernels k = kernels.orElseThrow();
        MemorySegment data = tensor.data(), ys = MemorySegment.ofArray(y);
        MemorySegment q = MemorySegment.ofArray(a.q), d = MemorySegment.ofArray(a.d), sums = MemorySegment.ofArray(a.sums);
        return new RowGroups(out, 4L * in * n, (r0, r1) -> k.blockDots(rowType, data.asSlice(r0 * rowBytes, (r1 - r0) * rowBytes),
                rowBytes, r1 - r0, in, n, q, d, sums, ys.asSlice(4L * r0), out));
    }
}
