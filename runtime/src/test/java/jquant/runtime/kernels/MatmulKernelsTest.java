package jquant.runtime.kernels;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * Every vector matmul kernel against its scalar twin, bit for bit, at the JVM's vector width (the
 * kernel tests also run with the width limited to 256 and 128 bits): rows of odd lengths, chunks that
 * start on a lane boundary, repeated rows, float16 subnormals and signed zeros, and the chains carried
 * from one call to the next.
 */
class MatmulKernelsTest {
    private static final ValueLayout.OfFloat F32 = ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ValueLayout.OfShort I16 = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private final MatmulKernels vector = new VectorMatmulKernels();
    private final MatmulKernels scalar = new ScalarMatmulKernels();
    private final int lanes = vector.lanes();

    private static float[] random(SplittableRandom rnd, int n) {
        float[] a = new float[n];
        for (int i = 0; i < n; i++) a[i] = (float) (rnd.nextDouble() * 2 - 1);
        return a;
    }

    /** 4 rows of {@code in} float16 values: random halves incl. subnormals and ±0, never inf/NaN. */
    private static MemorySegment halves(SplittableRandom rnd, int rows, int in, Arena arena) {
        MemorySegment s = arena.allocate(2L * rows * in);
        for (int i = 0; i < rows * in; i++) {
            short h;
            do {
                h = (short) rnd.nextInt(1 << 16);
            } while ((h & 0x7C00) == 0x7C00);
            s.set(I16, 2L * i, h);
        }
        return s;
    }

    @Test
    void vectorWidthIsTheTwinsLaneCountAndRespectsTheJvmLimit() {
        assertThat(scalar.lanes()).isEqualTo(vector.lanes()).isEqualTo(VectorWidth.FLOATS.length());
        var hotspot = java.lang.management.ManagementFactory.getPlatformMXBean(com.sun.management.HotSpotDiagnosticMXBean.class);
        int maxVectorBytes = Integer.parseInt(hotspot.getVMOption("MaxVectorSize").getValue());
        assertThat(VectorWidth.FLOATS.vectorByteSize()).isLessThanOrEqualTo(maxVectorBytes);
        System.out.printf("matmul kernels at %s (MaxVectorSize %d)%n", VectorWidth.describe(), maxVectorBytes);
    }

    @ParameterizedTest
    @CsvSource({"1", "3", "16", "17", "64", "172", "200", "1000"})
    void rowKernelsEqualTheirScalarTwins(int in) {
        SplittableRandom rnd = new SplittableRandom(in);
        try (Arena arena = Arena.ofConfined()) {
            float[] x = random(rnd, in + 5);
            float[] w32 = random(rnd, 4 * in);
            MemorySegment f32 = arena.allocate(16L * in);
            MemorySegment.copy(w32, 0, f32, F32, 0, w32.length);
            MemorySegment f16 = halves(rnd, 4, in, arena);
            MemorySegment bf16 = halves(rnd, 4, in, arena);
            byte[] i8 = new byte[4 * in];
            for (int i = 0; i < i8.length; i++) i8[i] = (byte) (rnd.nextInt(255) - 127);
            long r = 4L * in, h = 2L * in;
            // rows 2 and 3 are the same row, as a caller pads a last partial group
            for (int k0 = 0; k0 < in; k0 += Math.max(lanes, in / 2 / lanes * lanes)) {
                int from = k0;
                assertSame(acc -> vector.rowsF32(f32, 0, r, 2 * r, 2 * r, x, 5, from, in, acc),
                        acc -> scalar.rowsF32(f32, 0, r, 2 * r, 2 * r, x, 5, from, in, acc), rnd);
                assertSame(acc -> vector.rowsF16(f16, 0, h, 2 * h, 3 * h, x, 5, from, in, acc),
                        acc -> scalar.rowsF16(f16, 0, h, 2 * h, 3 * h, x, 5, from, in, acc), rnd);
                assertSame(acc -> vector.rowsBF16(bf16, 0, h, 2 * h, 3 * h, x, 5, from, in, acc),
                        acc -> scalar.rowsBF16(bf16, 0, h, 2 * h, 3 * h, x, 5, from, in, acc), rnd);
                assertSame(acc -> vector.rowsI8(i8, 0, in, 2 * in, 3 * in, x, 5, from, in, acc),
                        acc -> scalar.rowsI8(i8, 0, in, 2 * in, 3 * in, x, 5, from, in, acc), rnd);
                assertSame(acc -> vector.rowsF32(w32, 0, in, 2 * in, 3 * in, x, 5, from, in, acc),
                        acc -> scalar.rowsF32(w32, 0, in, 2 * in, 3 * in, x, 5, from, in, acc), rnd);
            }
            float[] xt = random(rnd, 4 * in);
            assertSame(acc -> vector.tile(w32, 0, in, 2 * in, 3 * in, xt, 0, in, 2 * in, 3 * in, 0, in, acc, 16 * lanes),
                    acc -> scalar.tile(w32, 0, in, 2 * in, 3 * in, xt, 0, in, 2 * in, 3 * in, 0, in, acc, 16 * lanes), rnd);
            float[] hv = new float[in], hs = new float[in];
            vector.f16ToFloats(f16, h, hv, 0, in);
            scalar.f16ToFloats(f16, h, hs, 0, in);
            assertThat(hv).containsExactly(hs);
            vector.bf16ToFloats(bf16, h, hv, 0, in);
            scalar.bf16ToFloats(bf16, h, hs, 0, in);
            assertThat(hv).containsExactly(hs);
        }
    }

    /** Both kernels continue the same random starting chains (the carried state of a chunked row). */
    private void assertSame(java.util.function.Consumer<float[]> v, java.util.function.Consumer<float[]> s, SplittableRandom rnd) {
        float[] start = random(rnd, 32 * lanes);
        float[] av = start.clone(), as = start.clone();
        v.accept(av);
        s.accept(as);
        for (int i = 0; i < av.length; i++) {
            assertThat(Float.floatToRawIntBits(av[i])).as("chain value %d: %s vs %s", i, av[i], as[i])
                    .isEqualTo(Float.floatToRawIntBits(as[i]));
        }
    }

    @Test
    void float16ConversionIsExactForEveryFiniteHalf() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment all = arena.allocate(2L * 65536);
            int n = 0;
            for (int h = 0; h < 65536; h++) if ((h & 0x7C00) != 0x7C00) all.set(I16, 2L * n++, (short) h);
            float[] out = new float[n];
            vector.f16ToFloats(all, 0, out, 0, n);
            for (int i = 0; i < n; i++) {
                float expected = Float.float16ToFloat(all.get(I16, 2L * i));
                assertThat(Float.floatToRawIntBits(out[i])).as("half %04x", all.get(I16, 2L * i) & 0xFFFF)
                        .isEqualTo(Float.floatToRawIntBits(expected));
            }
        }
    }

    /**
     * The float16 row kernel takes activations × 2^112 and weights × 2^-112: its chains must be the
     * definition's — the float32 values of the halves times the unscaled activations — bit for bit, for
     * every finite half (subnormals, the largest, ±0) and activations up to just below the limit.
     */
    @ParameterizedTest
    @CsvSource({"17", "200", "1000"})
    void float16RowsOnScaledActivationsAreTheDefinitionsChains(int in) {
        SplittableRandom rnd = new SplittableRandom(in * 31L);
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment f16 = halves(rnd, 4, in, arena);
            float[] asFloats = new float[4 * in];
            for (int i = 0; i < asFloats.length; i++) asFloats[i] = Float.float16ToFloat(f16.get(I16, 2L * i));
            float[] x = new float[in], scaled = new float[in];
            for (int i = 0; i < in; i++) {
                x[i] = switch (i % 4) {
                    case 0 -> (float) rnd.nextGaussian();
                    case 1 -> Math.nextDown(MatmulKernels.F16_INPUT_LIMIT) * (rnd.nextBoolean() ? 1 : -1);
                    case 2 -> Float.MIN_VALUE * rnd.nextInt(1000);
                    default -> (float) (rnd.nextDouble() * 2 - 1) * 3e4f;
                };
                scaled[i] = x[i] * MatmulKernels.F16_INPUT_SCALE;
            }
            long h = 2L * in;
            for (MatmulKernels k : new MatmulKernels[] {vector, scalar}) {
                assertSame(acc -> k.rowsF16(f16, 0, h, 2 * h, 3 * h, scaled, 0, 0, in, acc),
                        acc -> scalar.rowsF32(asFloats, 0, in, 2 * in, 3 * in, x, 0, 0, in, acc), rnd);
            }
        }
    }

    @Test
    void nonFiniteFloat16WeightsAreFoundWhereTheyAre() {
        for (short special : new short[] {(short) 0x7C00, (short) 0xFC00, (short) 0x7E01, (short) 0xFFFF}) {
            for (int column : new int[] {0, 3, 4, 257, 298, 299}) {
                try (Arena arena = Arena.ofConfined()) {
                    int in = 300;
                    MemorySegment w = halves(new SplittableRandom(column), 4, in, arena);
                    for (int r = 0; r < 4; r++) NonFiniteWeightException.requireFiniteF16(w, 2L * r * in, in, r);
                    w.set(I16, 2L * (2 * in + column), special);
                    NonFiniteWeightException.requireFiniteF16(w, 2L * in, in, 1);
                    assertThatThrownBy(() -> NonFiniteWeightException.requireFiniteF16(w, 4L * in, in, 7))
                            .isInstanceOfSatisfying(NonFiniteWeightException.class, e -> {
                                assertThat(e.row()).isEqualTo(7);
                                assertThat(e.column()).isEqualTo(column);
                            });
                }
            }
        }
    }
}
