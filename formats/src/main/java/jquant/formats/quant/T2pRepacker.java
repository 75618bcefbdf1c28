package jquant.formats.quant;

/**
 * Repacks stock PQ2_0 rows into T2P row-pair blocks: four PQ2_0 blocks (same columns, four
 * consecutive rows) become one T2P block. Scales are copied as fp16 bits and codes as stored
 * (code 3 included), so the repack is lossless and byte-for-byte reversible.
 */
public final class T2pRepacker {

    private T2pRepacker() {}

    /**
     * @throws T2pShapeException if rows % 4 != 0 or cols % 128 != 0 — keep the stock layout then
     */
    public static byte[] repack(String name, byte[] pq2, int rows, int cols) throws T2pShapeException {
        T2pShapeException.check(name, rows, cols);
        Pq2Block.checkLength(name, pq2, rows, cols);
        int nb = cols / Pq2Block.WEIGHTS;
        byte[] out = new byte[Math.toIntExact((long) rows / T2pBlock.ROWS * nb * T2pBlock.BYTES)];
        int[][] u = new int[T2pBlock.ROWS][T2pBlock.WEIGHTS];
        short[] scales = new short[T2pBlock.ROWS];
        for (int g = 0; g < rows / T2pBlock.ROWS; g++) {
            for (int b = 0; b < nb; b++) {
                for (int r = 0; r < T2pBlock.ROWS; r++) {
                    int src = ((4 * g + r) * nb + b) * Pq2Block.BYTES;
                    scales[r] = Pq2Block.scaleBits(pq2, src);
                    for (int k = 0; k < T2pBlock.WEIGHTS; k++) u[r][k] = Pq2Block.storedCode(pq2, src, k);
                }
                T2pBlock.pack(u, scales, out, (int) T2pBlock.blockOffset(g, b, cols));
            }
        }
        return out;
    }
}
