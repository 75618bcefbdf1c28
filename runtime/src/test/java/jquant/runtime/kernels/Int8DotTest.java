package jquant.runtime.kernels;

import org.junit.jupiter.api.Test;

import java.util.Random;

import static org.assertj.core.api.Assertions.assertThat;

class Int8DotTest {
    @Test
    void vectorEqualsTheScalarOracleForEveryLengthAndOffset() {
        Random random = new Random(5);
        Int8Dot scalar = new ScalarInt8Dot(), vector = new VectorInt8Dot();
        for (int len = 0; len < 300; len += 7) {
            byte[] a = new byte[len + 5], b = new byte[len + 3];
            for (int i = 0; i < a.length; i++) a[i] = (byte) (random.nextInt(255) - 127);
            for (int i = 0; i < b.length; i++) b[i] = (byte) (random.nextInt(255) - 127);
            assertThat(vector.dot(a, 5, b, 3, len)).as("len %d", len).isEqualTo(scalar.dot(a, 5, b, 3, len));
        }
    }

    @Test
    void extremeCodesAccumulateWithoutOverflowUpToTheLimit() {
        int len = 14336;
        byte[] a = new byte[len], b = new byte[len];
        java.util.Arrays.fill(a, (byte) -127);
        java.util.Arrays.fill(b, (byte) -127);
        assertThat(new VectorInt8Dot().dot(a, 0, b, 0, len)).isEqualTo(127 * 127 * len);
        assertThat(new ScalarInt8Dot().dot(a, 0, b, 0, len)).isEqualTo(127 * 127 * len);
        assertThat((long) Int8Dot.MAX_LENGTH * 127 * 127).isLessThanOrEqualTo(Integer.MAX_VALUE);
    }
}
