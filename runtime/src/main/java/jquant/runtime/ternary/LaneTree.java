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
 *   first (in the kernels' loops): two short[32] x, y
 *         ──firstEven/firstOdd two-vector permutes + add──► short[32]   [x g0, x g1, y g0, y g1] × 8
 *         ──widen adjacent shorts to int───────────────────► int[16]    4 groups × 4 lanes, to scratch
 *   last (here): four int[16] ──pair up even/odd──► two ──pair up──► one int[16]   16 groups × 1
 * </pre>
 *
 * <p>The first step is written out in each kernel's loop body, and the second takes arrays: every
 * Vector API call must sit directly in a loop body. C2 force-inlines those, but stops inlining our
 * own helpers past a node budget, and a helper left out of line boxes every vector it takes or
 * returns (measured: a 6× slowdown).
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
