package jquant.runtime.ternary;

import jdk.incubator.vector.IntVector;
import jdk.incubator.vector.ShortVector;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorSpecies;

/**
 * Reduces eight 512-bit short partial-sum vectors, each holding two lane groups of 16, to one int
 * vector whose lane k is the total of group {@code k % 2} of input {@code k / 2} — the per-block
 * integer dots the float formula needs, without a horizontal reduction per block.
 *
 * <pre>
 *   8 × short[32] ──pair up same-group lanes (two-vector permute + add)──► 4 × short[32]
 *                 ──widen adjacent shorts to int──────────────────────────► 4 × int[16]
 *                 ──pair up──► 2 × int[16] ──pair up──► 1 × int[16]
 * </pre>
 *
 * The first step's permutation depends on where a layout keeps its groups (T2P interleaves its two
 * rows every 4 lanes, PQ2_0 keeps two blocks in halves); the later ones take even and odd lanes.
 * An input lane may hold at most ±16383 so that a pair still fits a short.
 */
final class LaneTree {

    static final VectorSpecies<Short> S = ShortVector.SPECIES_512;
    static final VectorSpecies<Integer> I = IntVector.SPECIES_512;

    final ShortVector firstEven, firstOdd;
    final IntVector even, odd;

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
        int[] ie = new int[16], io = new int[16];
        for (int k = 0; k < 16; k++) {
            ie[k] = 2 * k;
            io[k] = 2 * k + 1;
        }
        even = IntVector.fromArray(I, ie, 0);
        odd = IntVector.fromArray(I, io, 0);
    }

    /** Groups as the halves of the vector (lanes 0..15, 16..31). */
    static LaneTree halves() {
        int[] g = new int[32];
        for (int l = 16; l < 32; l++) g[l] = 1;
        return new LaneTree(g);
    }

    IntVector reduce(ShortVector s0, ShortVector s1, ShortVector s2, ShortVector s3,
                     ShortVector s4, ShortVector s5, ShortVector s6, ShortVector s7) {
        IntVector a = widen(pair(s0, s1)), b = widen(pair(s2, s3)), c = widen(pair(s4, s5)), d = widen(pair(s6, s7));
        return pair(pair(a, b), pair(c, d));
    }

    private ShortVector pair(ShortVector x, ShortVector y) {
        return firstEven.selectFrom(x, y).add(firstOdd.selectFrom(x, y));
    }

    private IntVector pair(IntVector x, IntVector y) {
        return even.selectFrom(x, y).add(odd.selectFrom(x, y));
    }

    /** int lane i = short lane 2i + short lane 2i+1, both sign-extended. */
    private static IntVector widen(ShortVector s) {
        IntVector v = s.reinterpretAsInts();
        return v.lanewise(VectorOperators.LSHL, 16).lanewise(VectorOperators.ASHR, 16).add(v.lanewise(VectorOperators.ASHR, 16));
    }
}
