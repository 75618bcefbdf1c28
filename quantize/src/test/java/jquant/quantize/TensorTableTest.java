package jquant.quantize;

import jquant.formats.DType;
import jquant.formats.Tensor;
import org.junit.jupiter.api.Test;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.util.SplittableRandom;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class TensorTableTest {

    @Test
    void aFormatsTensorGivesTheSameTableAsItsFloats() {
        float[] matrix = GreedyBitAllocatorTest.randomMatrix(new SplittableRandom(71), 12, 40);
        MemorySegment data = MemorySegment.ofArray(new byte[matrix.length * 4]);
        for (int i = 0; i < matrix.length; i++) {
            data.setAtIndex(ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN), i, matrix[i]);
        }
        Tensor tensor = new Tensor("blk.0.ffn_up.weight", new long[] {12, 40}, DType.F32, data);
        assertThat(RelativeError.table(tensor, Metric.EXACT, null))
                .isEqualTo(RelativeError.table("blk.0.ffn_up.weight", matrix, 12, 40, Metric.EXACT, null));
        Tensor vector = new Tensor("output_norm.weight", new long[] {480}, DType.F32, data);
        assertThatThrownBy(() -> RelativeError.table(vector, Metric.APPROX, null)).hasMessageContaining("not a weight matrix");
    }
}
