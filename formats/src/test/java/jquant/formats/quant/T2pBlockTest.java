package jquant.formats.quant;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.lang.foreign.MemorySegment;
import java.util.Arrays;
import java.util.Random;
import jquant.formats.DType;
import jquant.formats.Dequantizer;
import jquant.formats.Tensor;
import org.junit.jupiter.api.Test;

/** T2P read through formats: blocks built from the layout's byte formula, decoded whole and by row. */
class T2pBlockTest {

    /** 8 rows × 256 columns of codes u ∈ 0..3 and fp16 row-block scales, packed by the documented formula. */
    @Test
    void decodesRowGroupsAndSingleRowsAsTheLayoutDefines() {
        int rows = 8, cols = 256, nb = cols / 128;
        Random rnd = new Random(11);
        int[][] u = new int[rows][cols];
        short[][] d = new short[rows][nb];
        for (int r = 0; r < rows; r++) {
            for (int c = 0; c < cols; c++) u[r][c] = rnd.nextInt(4);
            for (int b = 0; b < nb; b++) d[r][b] = Float.floatToFloat16(0.01f + rnd.nextFloat());
        }
        byte[] bytes = new byte[rows / 4 * nb * 136];
        for (int g = 0; g < rows / 4; g++) {
            for (int b = 0; b < nb; b++) {
                int base = (g * nb + b) * 136;
                for (int r = 0; r < 4; r++) {
                    bytes[base + 2 * r] = (byte) d[4 * g + r][b];
                    bytes[base + 2 * r + 1] = (byte) (d[4 * g + r][b] >> 8);
                }
                for (int p = 0; p < 2; p++) {
                    for (int wd = 0; wd < 4; wd++) {
                        for (int j = 0; j < 16; j++) {
                            int row = 4 * g + 2 * p + (j >= 8 ? 1 : 0);
                            int v = 0;
                            for (int s = 0; s < 4; s++) v |= u[row][b * 128 + 8 * (4 * wd + s) + j % 8] << (2 * s);
                            bytes[base + 8 + 64 * p + 16 * wd + j] = (byte) v;
                        }
                    }
                }
            }
        }
        float[] expected = new float[rows * cols];
        for (int r = 0; r < rows; r++) {
            for (int c = 0; c < cols; c++) expected[r * cols + c] = (u[r][c] - 1) * Float.float16ToFloat(d[r][c / 128]);
        }
        Tensor t = new Tensor("w", new long[]{rows, cols}, DType.T2P, MemorySegment.ofArray(bytes));
        assertThat(t.toFloats()).isEqualTo(expected);
        for (int r = 0; r < rows; r++) assertThat(t.row(r)).as("row %d", r).isEqualTo(Arrays.copyOfRange(expected, r * cols, (r + 1) * cols));
        assertThat(DType.T2P.rowGroup()).isEqualTo(4);
        assertThat(DType.fromGgmlId(1000)).isEqualTo(DType.T2P);
    }

    @Test
    void needsTheRowLengthAndWholeRowGroups() {
        assertThatThrownBy(() -> Dequantizer.of(DType.T2P)).hasMessageContaining("row length");
        assertThatThrownBy(() -> Dequantizer.of(DType.T2P, 192).dequantize(MemorySegment.ofArray(new byte[136]), new float[512], 0, 512))
                .hasMessageContaining("multiple of 128");
        assertThatThrownBy(() -> DType.T2P.byteSize(2L * 128, 128)).hasMessageContaining("groups of 4");
    }
}
