package jquant.runtime.ternary;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assumptions.assumeThat;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.List;
import java.util.Random;
import jquant.runtime.nativelib.NativeKernels;
import org.junit.jupiter.api.Test;

/**
 * The C library's quantization straight into a plain column ({@code jq_quantize_plain}) against its oracle,
 * {@link ActivationBlocks#quantize} laid out as the plain column: the same bytes, on ordinary, extreme, tiny
 * (subnormal scales), all-zero and tie-making blocks, and the same first value named where one is not finite.
 */
class QuantizePlainTest {

    private static List<NativeKernels> withQuantizer() {
        return NativeKernels.supported().stream().filter(NativeKernels::hasT2pR16).toList();
    }

    /** The oracle's plain column: the int8 values, each block's sum, each block's scale. */
    private static byte[] oracle(float[] x) {
        ActivationBlocks a = ActivationBlocks.quantize(x);
        int blocks = a.blocks();
        MemorySegment out = MemorySegment.ofArray(new byte[(int) NativeKernels.plainColumnBytes(blocks)]);
        MemorySegment.copy(a.values(), 0, out, ValueLayout.JAVA_BYTE, 0, a.cols());
        MemorySegment.copy(a.sums(), 0, out, ValueLayout.JAVA_INT_UNALIGNED, a.cols(), blocks);
        MemorySegment.copy(a.scales(), 0, out, ValueLayout.JAVA_FLOAT_UNALIGNED, a.cols() + 4L * blocks, blocks);
        return out.toArray(ValueLayout.JAVA_BYTE);
    }

    private static float[] column(Random rnd, int blocks) {
        float[] x = new float[128 * blocks];
        for (int b = 0; b < blocks; b++) {
            int kind = b % 6;
            for (int i = 0; i < 128; i++) {
                int at = 128 * b + i;
                x[at] = switch (kind) {
                    case 0 -> (float) rnd.nextGaussian();
                    case 1 -> (float) (rnd.nextGaussian() * 1e30);                           // large, near overflow of x / scale's inputs
                    case 2 -> (float) (rnd.nextGaussian() * 1e-42);                          // subnormal values and scale
                    case 3 -> 0f;                                                            // scale zero: every q zero
                    case 4 -> (i == 0 ? 127f : (rnd.nextInt(255) - 127) + (rnd.nextBoolean() ? 0.5f : -0.5f)); // ties at scale 1
                    default -> (i % 2 == 0 ? -1f : 1f) * Float.intBitsToFloat(rnd.nextInt(0x7F000000));       // any finite magnitude
                };
            }
        }
        return x;
    }

    @Test
    void theCQuantizerWritesTheOraclesPlainColumn() {
        assumeThat(withQuantizer()).as("an instruction set with the sixteen-row copy").isNotEmpty();
        Random rnd = new Random(11);
        try (Arena arena = Arena.ofConfined()) {
            for (NativeKernels k : withQuantizer()) {
                for (int blocks : new int[] {1, 6, 16, 44}) {
                    for (int trial = 0; trial < 20; trial++) {
                        float[] x = column(rnd, blocks);
                        MemorySegment out = arena.allocate(NativeKernels.plainColumnBytes(blocks), 64);
                        assertThat(k.quantizePlain(MemorySegment.ofArray(x), blocks, out)).isEqualTo(-1L);
                        assertThat(out.toArray(ValueLayout.JAVA_BYTE)).as("%s, %d blocks", k.isa(), blocks).isEqualTo(oracle(x));
                    }
                }
            }
        }
    }

    @Test
    void theFirstValueThatIsNotFiniteIsNamed() {
        assumeThat(withQuantizer()).as("an instruction set with the sixteen-row copy").isNotEmpty();
        Random rnd = new Random(12);
        try (Arena arena = Arena.ofConfined()) {
            for (NativeKernels k : withQuantizer()) {
                for (float bad : new float[] {Float.NaN, Float.POSITIVE_INFINITY, Float.NEGATIVE_INFINITY}) {
                    float[] x = column(rnd, 6);
                    x[300] = bad;
                    x[700] = Float.NaN;
                    MemorySegment out = arena.allocate(NativeKernels.plainColumnBytes(6), 64);
                    assertThat(k.quantizePlain(MemorySegment.ofArray(x), 6, out)).as("%s", bad).isEqualTo(300L);
                }
            }
        }
    }
}
