package jquant.runtime.ternary;

import static jdk.incubator.vector.VectorOperators.ASHR;
import static jdk.incubator.vector.VectorOperators.LSHL;

import jdk.incubator.vector.IntVector;
import jdk.incubator.vector.ShortVector;
import jdk.incubator.vector.VectorSpecies;

/**
 * Turns per-lane partial sums into per-block integer dots without a horizontal reduction per block.
 * Eight 512-bit short partial-sum vectors, each holding two lane groups of 16 lanes, become one int
 * vector whose lane k is the total of group {@code k % 2} of input {@code k / 2}:
 *
 * <pre>
 *   first: pairs of short[32] ──add same-group lanes (two-vector permute)──► short[32]
 *                             ──widen adjacent shorts to int──────────────► int[16]  (4 groups × 4)
 *   last:  four int[16] ──pair up even/odd──► two ──pair up──► one int[16]            (16 groups × 1)
 * </pre>
 *
 * <p>The kernels keep partial sums in small L1 scratch arrays between the stages, and every Vector
 * API call sits directly in a loop body: C2 force-inlines those, but stops inlining our own helpers
 * past a node budget, and a helper left out of line boxes every vector it takes or returns (that
 * was a 6× slowdown). So helpers here take arrays, never vectors.
 *
 * <p>An input lane may hold at most ±16383 so that a same-group pair still fits a short.
 */
final class LaneTree {

    private static final VectorSpecies<Short> S = ShortVector.SPECIES_512;
    private static final VectorSpecies<Integer> I = IntVector.SPECIES_512;
    private static final IntVector EVEN, ODD;

    static {
        int[] e = new int[16], o = new int[16];
        for (int k = 0; k < 16; k++) {
            e[k] = 2 * k;
            o[k] = 2 * k + 1;
        }
        EVEN = IntVector.fromArray(I, e, 0);
        ODD = IntVector.fromArray(I, o, 0);
    }

    /** Two-vector permutations of the first step: output lanes 8g..8g+7 of each input are its group g. */
    final ShortVector firstEven, firstOdd;

    /** {@code groupOf[l]} ∈ {0, 1}: the group of input lane l; each group has 16 lanes. */
    LaneTree(int[] groupOf) {
        short[] e = new short[32], o = new short[32];
        for (int input = 0; input < 2; input++) {
            for (int g = 0; g < 2; g++) {
                int k = 16 * input + 8 * g, seen = 0;
                for (int l = 0; l < 32; l++) {
                    if (groupOf[l] != g) continue;
                    if (seen++ % 2 == 0) e[k] = (short) (32 * input + l);
                    else o[k++] = (short) (32 * input + l);
                }
            }
        }
        firstEven = ShortVector.fromArray(S, e, 0);
        firstOdd = ShortVector.fromArray(S, o, 0);
    }

    /** Groups as the halves of the vector (lanes 0..15, 16..31). */
    static LaneTree halves() {
        int[] g = new int[32];
        for (int l = 16; l < 32; l++) g[l] = 1;
        return new LaneTree(g);
    }

    /**
     * First half for {@code count} pairs of partial-sum vectors at partial[64i], partial[64i + 32]:
     * scratch[16i + 4g .. 16i + 4g + 3] hold group g of [x group 0, x group 1, y group 0, y group 1].
     */
    void first(short[] partial, int count, int[] scratch) {
        ShortVector e = firstEven, o = firstOdd;
        for (int i = 0; i < count; i++) {
            ShortVector x = ShortVector.fromArray(S, partial, 64 * i), y = ShortVector.fromArray(S, partial, 64 * i + 32);
            IntVector r = e.selectFrom(x, y).add(o.selectFrom(x, y)).reinterpretAsInts();
            r.lanewise(LSHL, 16).lanewise(ASHR, 16).add(r.lanewise(ASHR, 16)).intoArray(scratch, 16 * i);
        }
    }

    /**
     * Second half for {@code count} runs of four first-half results at scratch[64q ..]:
     * out[outAt + 16q + k] = (group k total >> shift) − sub[subAt + 16q + k].
     */
    static void last(int[] scratch, int count, int shift, int[] sub, int subAt, int[] out, int outAt) {
        for (int q = 0; q < count; q++) {
            int s = 64 * q;
            IntVector a = IntVector.fromArray(I, scratch, s), b = IntVector.fromArray(I, scratch, s + 16);
            IntVector c = IntVector.fromArray(I, scratch, s + 32), d = IntVector.fromArray(I, scratch, s + 48);
            IntVector ab = EVEN.selectFrom(a, b).add(ODD.selectFrom(a, b)), cd = EVEN.selectFrom(c, d).add(ODD.selectFrom(c, d));
            EVEN.selectFrom(ab, cd).add(ODD.selectFrom(ab, cd)).lanewise(ASHR, shift)
                    .sub(IntVector.fromArray(I, sub, subAt + 16 * q)).intoArray(out, outAt + 16 * q);
        }
    }
}
