package jquant.formats.quant;

import jquant.formats.DType;
import jquant.formats.TernaryCodecs;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Every ternary block codec (PQ2_0, TQ2_0, PTQ1_0, T2P) decodes what it encoded, for generated codes and
 * scales (jqwik). Rows come in fours and columns in 256s so that one tensor fits every layout; scales are
 * fp16 values, equal in pairs of 128-blocks, as TQ2_0 stores one per 256 weights.
 */
class TernaryCodecPropertyTest {

    @Provide
    Arbitrary<TernaryTensor> tensors() {
        return Combinators.combine(Arbitraries.integers().between(1, 3), Arbitraries.integers().between(1, 3))
                .flatAs((fours, blocks256) -> {
                    int rows = 4 * fours, cols = 256 * blocks256;
                    Arbitrary<byte[]> codes = Arbitraries.bytes().between((byte) -1, (byte) 1).array(byte[].class).ofSize(rows * cols);
                    Arbitrary<float[]> scales = Arbitraries.shorts().map(Float::float16ToFloat).filter(Float::isFinite)
                            .array(float[].class).ofSize(rows * cols / 256).map(half -> {
                                float[] s = new float[half.length * 2];
                                for (int i = 0; i < half.length; i++) s[2 * i] = s[2 * i + 1] = half[i];
                                return s;
                            });
                    return Combinators.combine(codes, scales).as((c, s) -> new TernaryTensor("w", rows, cols, s, c));
                });
    }

    @Property(tries = 100)
    void everyLayoutDecodesWhatItEncoded(@ForAll("tensors") TernaryTensor t) throws T2pShapeException {
        for (DType type : new DType[] {DType.PQ2_0, DType.TQ2_0, DType.PTQ1_0, DType.T2P}) {
            TernaryTensor back = TernaryCodecs.decode(TernaryCodecs.encode(t, new long[] {t.rows(), t.cols()}, type));
            assertThat(back.codes()).as(type.toString()).isEqualTo(t.codes());
            assertThat(back.scales()).as(type.toString()).isEqualTo(t.scales());
        }
    }
}
