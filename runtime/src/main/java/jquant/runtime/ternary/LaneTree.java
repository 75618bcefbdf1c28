package jquant.runtime.ternary;

import static jdk.incubator.vector.VectorOperators.ASHR;
import static jdk.incubator.vector.VectorOperators.I2F;
import static jdk.incubator.vector.VectorOperators.LSHL;
import static jdk.incubator.vector.VectorOperators.S2I;

import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.IntVector;
import jdk.incubator.vector.LongVector;
import jdk.incubator.vector.ShortVector;

/**
 * Turns per-lane short partial sums into per-group integer dots without a horizontal reduction per
 * group, at any vector width ({@link Simd}):
 *
 * <pre>
 *   first (written out in each kernel's loop): two short vectors x, y, each of two lane groups
 *         ──firstEven/firstOdd two-vector permutes + add──► [x g0, x g1, y g0, y g1]  (shorts, pairs summed)
 *         ──widen adjacent shorts to int───────────────────► int vector, each group's partials adjacent
 *   {@link #reduce}: levels of "sum adjacent int lanes of two vectors" until one lane per group is left
 *   {@link #finish}: (total &gt;&gt; shift) − sub
 * </pre>
 *
 * <p>The first step sits in each kernel's loop body, and the rest takes arrays: every Vector API call
 * must sit directly in a loop body compiled as one method. C2 force-inlines those, but stops inlining
 * our own helpers past a node budget, and a helper left out of line boxes every vector it takes or
 * returns, several times slower. So no method here takes or returns a vector.
 *
 * <p>An input lane may hold at most ±16383 so that a same-group pair still fits a short.
 */
final class LaneTree {

    /** Lanes 2k and 2k + 1 of two int vectors: one level of "sum adjacent int lanes" (also {@link T2pMatrix}'s last levels). */
    static final IntVector EVEN, ODD;

    static {
        int[] e = new int[Simd.LI], o = new int[Simd.LI];
        for (int k = 0; k < Simd.LI; k++) {
            e[k] = 2 * k;
            o[k] = 2 * k + 1;
        }
        EVEN = IntVector.fromArray(Simd.I, e, 0);
        ODD = IntVector.fromArray(Simd.I, o, 0);
    }

    /** Two-vector permutations of the first step: output lanes of input x, group g, come first and in order. */
    final ShortVector firstEven, firstOdd;

    /** {@code groupOf[l]} ∈ {0, 1}: the group of lane l of a short vector; each group has half the lanes. */
    LaneTree(int[] groupOf) {
        int n = Simd.LS;
        short[] e = new short[n], o = new short[n];
        for (int input = 0; input < 2; input++) {
            for (int g = 0; g < 2; g++) {
                int k = n / 2 * input + n / 4 * g, seen = 0;
                for (int l = 0; l < n; l++) {
                    if (groupOf[l] != g) continue;
                    if (seen++ % 2 == 0) e[k] = (short) (n * input + l);
                    else o[k++] = (short) (n * input + l);
                }
            }
        }
        firstEven = ShortVector.fromArray(Simd.S, e, 0);
        firstOdd = ShortVector.fromArray(Simd.S, o, 0);
    }

    /** Groups as the halves of the vector. */
    static LaneTree halves() {
        int[] g = new int[Simd.LS];
        for (int l = Simd.LS / 2; l < Simd.LS; l++) g[l] = 1;
        return new LaneTree(g);
    }

    /**
     * {@code levels} times, in place: vectors 2i and 2i+1 of tree (int vectors from offset {@code at}) become
     * vector i, whose lanes are the sums of adjacent lanes of the two, the first's then the second's.
     * {@code vectors} (a multiple of 2^levels) counts the input vectors.
     */
    static void reduce(int[] tree, int at, int vectors, int levels) {
        int w = Simd.LI;
        for (int level = 0; level < levels; level++, vectors /= 2) {
            for (int i = 0; i < vectors / 2; i++) {
                IntVector a = IntVector.fromArray(Simd.I, tree, at + 2 * i * w), b = IntVector.fromArray(Simd.I, tree, at + (2 * i + 1) * w);
                EVEN.selectFrom(a, b).add(ODD.selectFrom(a, b)).intoArray(tree, at + i * w);
            }
        }
    }

    /**
     * For each of {@code units} runs of n ints (n a multiple of the int lanes):
     * out[u·n + k] = (tree[at + u·n + k] &gt;&gt; shift) − sub[k].
     */
    static void finish(int[] tree, int at, int units, int n, int shift, int[] sub, int[] out) {
        for (int u = 0; u < units; u++) {
            for (int k = 0; k < n; k += Simd.LI) {
                IntVector.fromArray(Simd.I, tree, at + u * n + k).lanewise(ASHR, shift).sub(IntVector.fromArray(Simd.I, sub, k))
                        .intoArray(out, u * n + k);
            }
        }
    }

    /** 2^112: fp16 bits moved to float position, times this, are the fp16 value (normal or subnormal). */
    private static final float FP16_REBIAS = 0x1p112f;

    /**
     * out[m] = the fp16 value of bits[m] for m &lt; n (n a multiple of the int lanes), exactly for every
     * value: (h &amp; 0x7FFF) &lt;&lt; 13 is a float 2^112 times too small for normal and subnormal h;
     * infinities and NaNs get the float exponent 0xFF and keep their payload, as
     * {@link Float#float16ToFloat} does.
     */
    static void fp16(short[] bits, int n, float[] out) {
        for (int m = 0; m < n; m += Simd.LI) {
            IntVector h = (IntVector) ShortVector.fromArray(Simd.S_HALF, bits, m).convertShape(S2I, Simd.I, 0);
            IntVector magnitude = h.and(0x7FFF).lanewise(LSHL, 13);
            magnitude.reinterpretAsFloats().mul(FP16_REBIAS)
                    .blend(magnitude.or(0x7000_0000).reinterpretAsFloats(), h.and(0x7C00).eq(0x7C00).cast(Simd.F))
                    .reinterpretAsInts().or(h.and(0x8000).lanewise(LSHL, 16)).reinterpretAsFloats().intoArray(out, m);
        }
    }

    /** As {@link #fp16(short[], int, float[])}, the bits four to a long (little-endian): value m in fourBits[m / 4]. */
    static void fp16(long[] fourBits, int n, float[] out) {
        for (int m = 0; m < n; m += Simd.LI) {
            IntVector h = (IntVector) LongVector.fromArray(Simd.L_HALF, fourBits, m / 4).reinterpretAsShorts().convertShape(S2I, Simd.I, 0);
            IntVector magnitude = h.and(0x7FFF).lanewise(LSHL, 13);
            magnitude.reinterpretAsFloats().mul(FP16_REBIAS)
                    .blend(magnitude.or(0x7000_0000).reinterpretAsFloats(), h.and(0x7C00).eq(0x7C00).cast(Simd.F))
                    .reinterpretAsInts().or(h.and(0x8000).lanewise(LSHL, 16)).reinterpretAsFloats().intoArray(out, m);
        }
    }

    /**
     * The tree's last levels, {@link #finish} and the product part of the shared formula in one pass,
     * the sums kept in registers: for each of {@code units} runs of n output ints (whose 2^levels·n
     * input ints start at at + u·n·2^levels), dot = (sum of the lanes' tree &gt;&gt; shift) − sub[k],
     * then terms[u·n + k] = (float) dot · (d[u·n + k] · xs[k]) as {@link ActivationBlocks#term}.
     */
    static void epilogue(int[] tree, int at, int units, int n, int levels, int shift, int[] sub, float[] d, float[] xs, float[] terms) {
        if (levels > 2) {
            reduce(tree, at, units * n / Simd.LI << levels, levels - 2);
            levels = 2;
        }
        int w = Simd.LI, count = units * n;
        if (levels == 2) {
            for (int m = 0, k = 0, in = at; m < count; m += w, in += 4 * w, k = k + w == n ? 0 : k + w) {
                IntVector a = IntVector.fromArray(Simd.I, tree, in), b = IntVector.fromArray(Simd.I, tree, in + w);
                IntVector c = IntVector.fromArray(Simd.I, tree, in + 2 * w), e = IntVector.fromArray(Simd.I, tree, in + 3 * w);
                IntVector ab = EVEN.selectFrom(a, b).add(ODD.selectFrom(a, b)), ce = EVEN.selectFrom(c, e).add(ODD.selectFrom(c, e));
                IntVector dot = EVEN.selectFrom(ab, ce).add(ODD.selectFrom(ab, ce)).lanewise(ASHR, shift).sub(IntVector.fromArray(Simd.I, sub, k));
                ((FloatVector) dot.convertShape(I2F, Simd.F, 0)).mul(FloatVector.fromArray(Simd.F, d, m).mul(FloatVector.fromArray(Simd.F, xs, k)))
                        .intoArray(terms, m);
            }
        } else if (levels == 1) {
            for (int m = 0, k = 0, in = at; m < count; m += w, in += 2 * w, k = k + w == n ? 0 : k + w) {
                IntVector a = IntVector.fromArray(Simd.I, tree, in), b = IntVector.fromArray(Simd.I, tree, in + w);
                IntVector dot = EVEN.selectFrom(a, b).add(ODD.selectFrom(a, b)).lanewise(ASHR, shift).sub(IntVector.fromArray(Simd.I, sub, k));
                ((FloatVector) dot.convertShape(I2F, Simd.F, 0)).mul(FloatVector.fromArray(Simd.F, d, m).mul(FloatVector.fromArray(Simd.F, xs, k)))
                        .intoArray(terms, m);
            }
        } else {
            for (int m = 0, k = 0, in = at; m < count; m += w, in += w, k = k + w == n ? 0 : k + w) {
                IntVector dot = IntVector.fromArray(Simd.I, tree, in).lanewise(ASHR, shift).sub(IntVector.fromArray(Simd.I, sub, k));
                ((FloatVector) dot.convertShape(I2F, Simd.F, 0)).mul(FloatVector.fromArray(Simd.F, d, m).mul(FloatVector.fromArray(Simd.F, xs, k)))
                        .intoArray(terms, m);
            }
        }
    }
}
