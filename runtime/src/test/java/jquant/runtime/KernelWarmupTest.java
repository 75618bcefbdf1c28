package jquant.runtime;

import static org.assertj.core.api.Assertions.assertThatCode;

import java.util.List;
import jquant.formats.DType;
import jquant.runtime.ternary.Pq2Matrix;
import jquant.runtime.ternary.Ptq1Matrix;
import jquant.runtime.ternary.T2pMatrix;
import jquant.runtime.ternary.Tq2Matrix;
import org.junit.jupiter.api.Test;

/** The warm-up runs every kernel, float and each ternary layout's, on its own small inputs without a failure (it runs unobserved on a daemon thread). */
class KernelWarmupTest {
    @Test
    void everyKernelRunsOnTheWarmUpInputs() {
        assertThatCode(KernelWarmup::warmShared).doesNotThrowAnyException();
        for (DType type : List.of(DType.F32, DType.BF16)) {
            assertThatCode(() -> KernelWarmup.warmDense(type)).as(type.name()).doesNotThrowAnyException();
        }
        assertThatCode(KernelWarmup::warmInt8Rows).doesNotThrowAnyException();
        assertThatCode(KernelWarmup::warmFloatRows).doesNotThrowAnyException();
        for (Class<?> layout : List.of(T2pMatrix.class, Tq2Matrix.class, Pq2Matrix.class, Ptq1Matrix.class)) {
            assertThatCode(() -> KernelWarmup.warmTernary(layout)).as(layout.getSimpleName()).doesNotThrowAnyException();
        }
    }
}
