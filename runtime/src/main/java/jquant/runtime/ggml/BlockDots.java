package jquant.runtime.ggml;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import jquant.formats.DType;

/**
 * The exact definition of a row of llama.cpp's block types (Q4_0, Q8_0, Q4_K, Q5_K, Q6_K) times a
 * {@link Q8Activations} column, as ggml-cpu computes it ({@code ggml_vec_dot_q4_0_q8_0},
 * {@code ggml_vec_dot_q4_K_q8_K} …): per weight block an exact integer dot product of the codes and
 * the int8 activations, then one float term per block, added in ascending block order from 0:
 * <pre>
 *   Q4_0, Q8_0:  dot = Σ_j w_j · q_j            (w = nibble − 8, or the int8 code; 32 per block)
 *                term = (float) dot · (d · xd)
 *   Q4_K, Q5_K:  dot = Σ_s sc_s · Σ_j w_j · q_j  (8 sub-blocks of 32, unsigned 4/5-bit w, 6-bit sc and m)
 *                mdot = Σ_s m_s · Σ_j q_j
 *                term = (float) dot · (d · xd) − (float) mdot · (dmin · xd)
 *   Q6_K:        dot = Σ_s sc_s · Σ_j (w_j − 32) · q_j   (16 sub-blocks of 16, int8 sc)
 *                term = (float) dot · (d · xd)
 *   y = ((0 + term_0) + term_1) + …
 * </pre>
 * d, dmin are the block's fp16 scales, xd the activation block's scale. Integer sums are exact (every
 * order gives them), and the float formula has one order, with no fused multiply-add: so every kernel
 * (this plain one, {@link JavaBlockKernels}, the C library's) gives the same floats bit for bit. ggml
 * itself sums the terms in SIMD lanes, in an order that depends on the instruction set.
 */
public final class BlockDots {

    private static final ValueLayout.OfShort HALF = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    private BlockDots() {}

    /** Whether {@code type} has integer block kernels, and the activation type it pairs with. */
    public static Q8Activations.Kind activations(DType type) {
        return switch (type) {
            case Q4_0, Q8_0 -> Q8Activations.Kind.Q8_0;
            case Q4_K, Q5_K, Q6_K -> Q8Activations.Kind.Q8_K;
            default -> null;
        };
    }

    /** The fp16 value at {@code at}. */
    static float half(MemorySegment w, long at) {
        return Float.float16ToFloat(w.get(HALF, at));
    }

    private static int u8(MemorySegment w, long at) {
        return w.get(ValueLayout.JAVA_BYTE, at) & 0xFF;
    }

    /** Row {@code row} of {@code type} (whole blocks of {@code a.cols()} weights at {@code w}) times column {@code c} of {@code a}. */
    public static float row(DType type, MemorySegment w, long row, Q8Activations a, int c) {
        long rowBytes = type.byteSize(a.cols, a.cols);
        long at = row * rowBytes;
        int blocks = a.cols / type.blockSize();
        float acc = 0f;
        for (int b = 0; b < blocks; b++) {
            long p = at + b * type.byteSize(type.blockSize(), type.blockSize());
            int k0 = b * type.blockSize();
            acc += switch (type) {
                case Q8_0 -> q8_0(w, p, a, c, k0, b);
                case Q4_0 -> q4_0(w, p, a, c, k0, b);
                case Q4_K -> qk(w, p, -1, p + 16, a, c, k0, b);
                case Q5_K -> qk(w, p, p + 16, p + 48, a, c, k0, b);
                case Q6_K -> q6_k(w, p, a, c, k0, b);
                default -> throw new IllegalArgumentException(type + " has no integer block kernel");
            };
        }
        return acc;
    }

    private static float q8_0(MemorySegment w, long p, Q8Activations a, int c, int k0, int b) {
        int dot = 0;
        for (int j = 0; j < 32; j++) dot += w.get(ValueLayout.JAVA_BYTE, p + 2 + j) * a.q(c, k0 + j);
        return dot * (half(w, p) * a.scale(c, b));
    }

    private static float q4_0(MemorySegment w, long p, Q8Activations a, int c, int k0, int b) {
        int dot = 0;
        for (int j = 0; j < 16; j++) {
            int v = u8(w, p + 2 + j);
            dot += ((v & 15) - 8) * a.q(c, k0 + j) + ((v >> 4) - 8) * a.q(c, k0 + 16 + j);
        }
        return dot * (half(w, p) * a.scale(c, b));
    }

    /** Q4_K / Q5_K's 6-bit scale (m = 0) or minimum (m = 1) of sub-block s (ggml's get_scale_min_k4). */
    static int scaleMin(MemorySegment w, long scales, int s, int m) {
        if (s < 4) return u8(w, scales + s + 4 * m) & 63;
        return m == 0 ? (u8(w, scales + s + 4) & 15) | (u8(w, scales + s - 4) >> 6) << 4
                      : (u8(w, scales + s + 4) >> 4) | (u8(w, scales + s) >> 6) << 4;
    }

    /** Q4_K (qh −1) or Q5_K: weight e's code is nibble (e / 32) % 2 of qs[32 (e / 64) + e % 32], Q5_K's bit 4 bit e / 32 of qh[e % 32]. */
    private static float qk(MemorySegment w, long p, long qh, long qs, Q8Activations a, int c, int k0, int b) {
        int dot = 0, mdot = 0;
        for (int s = 0; s < 8; s++) {
            int sub = 0;
            for (int l = 0; l < 32; l++) {
                int v = u8(w, qs + 32 * (s / 2) + l);
                int code = s % 2 == 0 ? v & 15 : v >> 4;
                if (qh >= 0) code |= (u8(w, qh + l) >> s & 1) << 4;
                sub += code * a.q(c, k0 + 32 * s + l);
            }
            dot += scaleMin(w, p + 4, s, 0) * sub;
            mdot += scaleMin(w, p + 4, s, 1) * (a.sum16(c, k0 / 16 + 2 * s) + a.sum16(c, k0 / 16 + 2 * s + 1));
        }
        float xd = a.scale(c, b);
        return dot * (half(w, p) * xd) - mdot * (half(w, p + 2) * xd);
    }

    /** Q6_K: weight e = 128h + 32k + l: low bits nibble k / 2 of ql[64h + 32 (k % 2) + l], high bits 2k of qh[32h + l]. */
    private static float q6_k(MemorySegment w, long p, Q8Activations a, int c, int k0, int b) {
        int dot = 0;
        for (int s = 0; s < 16; s++) {
            int sub = 0;
            for (int i = 0; i < 16; i++) {
                int e = 16 * s + i, h = e / 128, k = e % 128 / 32, l = e % 32;
                int lo = u8(w, p + 64 * h + 32 * (k % 2) + l) >> 4 * (k / 2) & 15;
                int hi = u8(w, p + 128 + 32 * h + l) >> 2 * k & 3;
                sub += ((lo | hi << 4) - 32) * a.q(c, k0 + e);
            }
            dot += w.get(ValueLayout.JAVA_BYTE, p + 192 + s) * sub;
        }
        return dot * (half(w, p + 208) * a.scale(c, b));
    }
}
