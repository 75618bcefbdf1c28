package jquant.pack.ternary;

import jquant.formats.quant.TernaryTensor;


/**
 * BitNet b1.58 absmean ternarization, for making ternary test models out of float checkpoints:
 * s = mean |W| over the tensor, w = clip(round(W / s), −1, +1) with round half to even (PyTorch's
 * {@code round}). The codes are decided with the float s; the stored scale is s rounded to fp16 —
 * stated here because every ternary container keeps fp16 scales. An all-zero tensor gets s = 0.
 */
public final class Ternarizer {

    private Ternarizer() {}

    public static TernaryTensor absmean(String name, float[] w, int rows, int cols) {
        if ((long) rows * cols != w.length) {
            throw new IllegalArgumentException(name + ": " + w.length + " weights for " + rows + "×" + cols);
        }
        double sum = 0;
        for (int i = 0; i < w.length; i++) {
            if (!Float.isFinite(w[i])) {
                throw new IllegalArgumentException(name + ": weight at row " + i / cols + " col " + i % cols + " is " + w[i]);
            }
            sum += Math.abs(w[i]);
        }
        float s = (float) (sum / w.length);
        byte[] codes = new byte[w.length];
        if (s > 0f) {
            for (int i = 0; i < w.length; i++) codes[i] = (byte) Math.max(-1, Math.min(1, (int) Math.rint(w[i] / s)));
        }
        float stored = Float.float16ToFloat(Float.floatToFloat16(s));
        float[] scales = new float[rows * (cols / TernaryTensor.BLOCK)];
        java.util.Arrays.fill(scales, stored);
        return new TernaryTensor(name, rows, cols, scales, codes);
    }
}
