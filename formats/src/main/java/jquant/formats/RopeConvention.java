package jquant.formats;

/**
 * How a checkpoint's q/k projection rows pair up under rotary position embedding.
 *
 * <ul>
 *   <li>{@link #ADJACENT_PAIRS}: Meta / llama2.c / llama.cpp "NORM": within a head, element 2i is
 *       rotated with 2i+1.</li>
 *   <li>{@link #ROTATE_HALF}: Hugging Face: element i is rotated with i + headDim/2. HF exporters get
 *       there by permuting the q/k rows of a Meta checkpoint; {@link #toAdjacentPairs} undoes it.</li>
 * </ul>
 */
public enum RopeConvention {
    ADJACENT_PAIRS,
    ROTATE_HALF;

    /**
     * Reorders the rows of a rotate-half q or k matrix ({@code heads * headDim} rows of {@code cols})
     * into adjacent-pair order: llama2.c {@code permute_reverse}. Row {@code h*headDim + 2i + p} of the
     * result is row {@code h*headDim + p*headDim/2 + i} of the input.
     */
    public static float[] toAdjacentPairs(float[] w, int heads, int headDim, int cols) {
        float[] out = new float[w.length];
        int[] order = adjacentPairOrder(heads, headDim);
        for (int dst = 0; dst < order.length; dst++) System.arraycopy(w, order[dst] * cols, out, dst * cols, cols);
        return out;
    }

    /**
     * The same reordering as a row map: row {@code r} of the adjacent-pair matrix is row {@code order[r]}
     * of the rotate-half one (llama.cpp's convert_hf_to_gguf.py {@code LlamaModel.permute}, undone).
     */
    public static int[] adjacentPairOrder(int heads, int headDim) {
        int[] order = new int[heads * headDim];
        int half = headDim / 2;
        for (int h = 0; h < heads; h++) {
            for (int i = 0; i < half; i++) {
                for (int p = 0; p < 2; p++) order[h * headDim + 2 * i + p] = h * headDim + p * half + i;
            }
        }
        return order;
    }
}
