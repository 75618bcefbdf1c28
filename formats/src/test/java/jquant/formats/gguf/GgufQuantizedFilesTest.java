package jquant.formats.gguf;

import static org.assertj.core.api.Assertions.assertThat;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.util.Map;
import jquant.formats.DType;
import jquant.formats.Tensor;
import jquant.testsupport.SharedFiles;
import jquant.testsupport.Slow;
import org.junit.jupiter.api.Test;

/**
 * The real llama.cpp-quantized files decode to their F32 source within each format's rounding (Q4_0,
 * Q8_0, and the Q6_K {@code output} of tinystories-6M-Q4_0), and the
 * TQ2_0 ternary file decodes exactly (the ternary model's weights are exactly {−s, 0, +s}): bit-identical
 * except that the F32 file keeps −0 where TQ2_0 can only give +0.
 */
@Slow
class GgufQuantizedFilesTest {
    private static final ValueLayout.OfShort HALF = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    /** fp16 keeps 11 significant bits: rounding the scale moves it by at most this relative amount. */
    private static final double HALF_RELATIVE = Math.scalb(1.0, -11);
    /** Absolute rounding step of fp16 subnormals. */
    private static final double HALF_SUBNORMAL_STEP = Math.scalb(1.0, -24);
    private static final double SLACK = 1.001;

    /** Per type: worst |decoded − f32| / |d| (unclamped codes), worst |decoded − f32|, worst ratio for Q4_0's clamped top code. */
    private final Map<DType, double[]> worst = new java.util.EnumMap<>(DType.class);

    @Test
    void stories260kQ8_0WithinHalfAStep() throws Exception {
        compareToF32("stories260K-Q8_0.gguf", "stories260K-f32.gguf");
        report("stories260K-Q8_0");
        assertThat(worst).containsOnlyKeys(DType.Q8_0, DType.F16);
    }

    @Test
    void stories260kQ4_0WithinHalfAStep() throws Exception {
        compareToF32("stories260K-Q4_0.gguf", "stories260K-f32.gguf");
        report("stories260K-Q4_0");
        assertThat(worst).containsOnlyKeys(DType.Q4_0, DType.Q8_0, DType.F16);
    }

    @Test
    void tinystories6mQ4_0WithQ6_KOutputWithinHalfAStep() throws Exception {
        compareToF32("tinystories-6M/tinystories-6M-Q4_0.gguf", "tinystories-6M/tinystories-6M-f32.gguf");
        report("tinystories-6M-Q4_0");
        assertThat(worst).containsOnlyKeys(DType.Q4_0, DType.Q6_K);
        try (GgufCheckpoint q = GgufCheckpoint.open(SharedFiles.model("tinystories-6M/tinystories-6M-Q4_0.gguf"));
             GgufCheckpoint f = GgufCheckpoint.open(SharedFiles.model("tinystories-6M/tinystories-6M-f32.gguf"))) {
            assertThat(q.config()).isEqualTo(f.config());
            assertThat(q.tensor(jquant.formats.TensorKind.HEAD, 0).dtype()).isEqualTo(DType.Q6_K);
        }
    }

    @Test
    void ternaryTq2_0IsExactlyTheF32Weights() throws Exception {
        try (GgufFile tq = GgufFile.open(SharedFiles.model("tinystories-6M-ternary/tinystories-6M-ternary-TQ2_0.gguf"));
             GgufFile f32 = GgufFile.open(SharedFiles.model("tinystories-6M-ternary/tinystories-6M-ternary-f32.gguf"))) {
            int ternary = 0;
            long signedZeros = 0;
            for (Tensor t : tq.tensors().values()) {
                Tensor reference = f32.tensors().get(t.name());
                assertThat(t.shape()).as(t.name()).isEqualTo(reference.shape());
                float[] decoded = t.toFloats();
                float[] expected = reference.toFloats();
                for (int i = 0; i < decoded.length; i++) {
                    boolean sameBits = Float.floatToRawIntBits(decoded[i]) == Float.floatToRawIntBits(expected[i]);
                    // (0 − 1 + 1)·d is +0 while the F32 export kept the sign of −0 weights: equal, not the same bits.
                    boolean bothZero = decoded[i] == 0f && expected[i] == 0f;
                    if (bothZero && !sameBits) signedZeros++;
                    if (!sameBits && !bothZero) {
                        throw new AssertionError(t.name() + "[" + i + "] decodes to " + decoded[i] + ", F32 file holds " + expected[i]);
                    }
                }
                if (t.dtype() == DType.TQ2_0) ternary++;
            }
            assertThat(ternary).isEqualTo(42);
            System.out.println("tinystories-6M-ternary TQ2_0: all weights equal to F32; " + signedZeros + " of them are −0 in F32 and +0 decoded");
        }
    }

    private void compareToF32(String quantized, String reference) throws Exception {
        try (GgufFile q = GgufFile.open(SharedFiles.model(quantized)); GgufFile f = GgufFile.open(SharedFiles.model(reference))) {
            assertThat(q.tensors().keySet()).containsExactlyInAnyOrderElementsOf(f.tensors().keySet());
            for (Tensor t : q.tensors().values()) {
                Tensor ref = f.tensors().get(t.name());
                assertThat(t.shape()).as(t.name()).isEqualTo(ref.shape());
                float[] x = ref.toFloats();
                float[] decoded = t.toFloats();
                switch (t.dtype()) {
                    case F32 -> assertThat(decoded).as(t.name()).containsExactly(x);
                    case F16 -> checkF16(t, x, decoded);
                    case Q8_0, Q4_0 -> checkBlocks(t, x, decoded);
                    case Q6_K -> checkQ6_K(t, x, decoded);
                    default -> throw new AssertionError("unexpected type " + t.dtype() + " for " + t.name());
                }
            }
        }
    }

    private void checkF16(Tensor t, float[] x, float[] decoded) {
        double[] w = worst.computeIfAbsent(DType.F16, k -> new double[3]);
        for (int i = 0; i < x.length; i++) {
            double err = Math.abs(decoded[i] - x[i]);
            assertThat(err).as("%s[%d]", t.name(), i).isLessThanOrEqualTo(Math.abs(x[i]) * HALF_RELATIVE + HALF_SUBNORMAL_STEP / 2);
            w[1] = Math.max(w[1], err);
        }
    }

    /**
     * Round-to-nearest puts every weight within d/2 of its code's value, plus the error of storing d in
     * fp16 (|q| · |d| · 2^-11). Q4_0 maps [−8d, 7.5d] to codes 0..15 and clamps the top code, so a weight
     * of code 15 on the far side of the block's signed maximum may be up to d away.
     */
    private void checkBlocks(Tensor t, float[] x, float[] decoded) {
        double[] w = worst.computeIfAbsent(t.dtype(), k -> new double[3]);
        MemorySegment data = t.data();
        int blockSize = t.dtype().blockSize();
        for (int b = 0; b < x.length / blockSize; b++) {
            long base = (long) b * t.dtype().blockBytes();
            float d = Math.abs(Float.float16ToFloat(data.get(HALF, base)));
            for (int i = 0; i < blockSize; i++) {
                int e = b * blockSize + i;
                int code = t.dtype() == DType.Q8_0
                        ? data.get(ValueLayout.JAVA_BYTE, base + 2 + i)
                        : ((Byte.toUnsignedInt(data.get(ValueLayout.JAVA_BYTE, base + 2 + i % 16)) >> (i < 16 ? 0 : 4)) & 15) - 8;
                double step = t.dtype() == DType.Q4_0 && code == 7 ? 1.0 : 0.5;
                double bound = (step * d + Math.abs(code) * (d * HALF_RELATIVE + HALF_SUBNORMAL_STEP)) * SLACK;
                double err = Math.abs(decoded[e] - x[e]);
                if (err > bound) {
                    throw new AssertionError(t.name() + "[" + e + "]: |" + decoded[e] + " − " + x[e] + "| = " + err + " exceeds " + bound + " (d = " + d + ")");
                }
                w[1] = Math.max(w[1], err);
                if (d > 0 && step == 0.5) w[0] = Math.max(w[0], err / d);
                if (d > 0 && step == 1.0) w[2] = Math.max(w[2], err / d);
            }
        }
    }

    /**
     * Q6_K (ggml {@code quantize_row_q6_K_ref}/{@code _impl}) fixes each 16-weight sub-block's step
     * {@code d_s = fp16(d) · sc} first and only then rounds every weight against that very step:
     * {@code l = clamp(round(x / d_s), −32, 31)}. The decoder computes the same float product
     * {@code d_s · l}, so the fp16 rounding of {@code d} cancels: an interior code is within
     * {@code |d_s|/2} of its weight (plus float rounding of the division and product, ≤ 2^-22 relative).
     * A code at either end of the range (stored 0 or 63) may be clamped: its weight lies on the outer
     * side of the code's value less half a step (checked), but no two-sided bound follows from the
     * format, because the int8 rounding of a small sub-block scale ({@code sc = round(s·128/max s)})
     * can leave that sub-block's largest weight many steps beyond the end code; the overshoot is
     * measured and reported, in steps.
     */
    private void checkQ6_K(Tensor t, float[] x, float[] decoded) {
        double[] w = worst.computeIfAbsent(DType.Q6_K, k -> new double[3]);
        MemorySegment data = t.data();
        for (int b = 0; b < x.length / 256; b++) {
            long base = (long) b * DType.Q6_K.blockBytes();
            float d = Float.float16ToFloat(data.get(HALF, base + 208));
            for (int i = 0; i < 256; i++) {
                int e = b * 256 + i;
                float step = d * data.get(ValueLayout.JAVA_BYTE, base + 192 + i / 16);
                double err = Math.abs(decoded[e] - x[e]);
                w[1] = Math.max(w[1], err);
                if (step == 0) {
                    assertThat(decoded[e]).as("%s[%d] in a zero-step sub-block", t.name(), e).isZero();
                    continue;
                }
                long level = Math.round(decoded[e] / step);
                assertThat((double) Math.abs(decoded[e] - level * step)).as("%s[%d] on the grid", t.name(), e).isLessThanOrEqualTo(Math.abs(step) * 1e-6);
                boolean clamped = level == -32 || level == 31;
                double inSteps = (x[e] - decoded[e]) / step; // signed, in units of the step
                if (!clamped) {
                    double bound = (0.5 + Math.scalb(1.0, -22) * (1 + Math.abs(level))) * Math.abs(step);
                    if (err > bound) {
                        throw new AssertionError(t.name() + "[" + e + "]: |" + decoded[e] + " − " + x[e] + "| = " + err + " exceeds " + bound + " (step " + step + ")");
                    }
                    w[0] = Math.max(w[0], Math.abs(inSteps));
                } else {
                    // Clamped at the top (31) the weight is above 30.5 steps; at the bottom (−32) below −31.5.
                    double outward = level == 31 ? inSteps : -inSteps;
                    assertThat(outward).as("%s[%d] clamped at %d lies outward", t.name(), e, level).isGreaterThanOrEqualTo(-0.5 - 1e-6);
                    w[2] = Math.max(w[2], Math.abs(inSteps));
                }
            }
        }
    }

    private void report(String file) {
        worst.forEach((type, w) -> System.out.printf("%s %s: max |error| = %.3g%s%n", file, type, w[1],
                type == DType.F16 ? "" : String.format(", max |error|/d = %.4f%s", w[0],
                        switch (type) {
                            case Q4_0 -> String.format(" (clamped top code: %.4f)", w[2]);
                            case Q6_K -> String.format(" (clamped end codes, no two-sided bound: %.4f)", w[2]);
                            default -> "";
                        })));
    }
}
