package jquant.runtime;

import static org.assertj.core.api.Assertions.assertThatCode;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.List;
import jquant.formats.DType;
import jquant.runtime.ternary.TernaryKernels;
import org.junit.jupiter.api.Test;

/**
 * The warm-up runs every kernel, float and each ternary layout's, without a failure (it runs
 * unobserved on a daemon thread); a kernel that reads stored weights on the first bytes of the
 * model's storage when it has enough of them, on its own zeros when it has not, and quietly not at
 * all once the model is closed.
 */
class KernelWarmupTest {
    @Test
    void everyKernelRunsOnTheWarmUpInputs() {
        assertThatCode(() -> KernelWarmup.warmShared(null)).doesNotThrowAnyException();
        try (Arena arena = Arena.ofConfined()) {
            for (MemorySegment stored : List.of(arena.allocate(1 << 16, 64), arena.allocate(16, 64))) {
                assertThatCode(() -> KernelWarmup.warmShared(stored)).as(stored.byteSize() + " stored bytes").doesNotThrowAnyException();
                for (DType type : List.of(DType.F32, DType.BF16)) {
                    assertThatCode(() -> KernelWarmup.warmDense(type, stored)).as(type + ", " + stored.byteSize() + " stored bytes")
                            .doesNotThrowAnyException();
                }
            }
        }
        assertThatCode(KernelWarmup::warmInt8Rows).doesNotThrowAnyException();
        assertThatCode(KernelWarmup::warmFloatRows).doesNotThrowAnyException();
        for (DType type : TernaryKernels.types()) {
            assertThatCode(() -> KernelWarmup.warmTernary(type)).as(type.name()).doesNotThrowAnyException();
        }
    }

    @Test
    void aWarmUpWhoseModelWasClosedStopsQuietly() {
        Arena arena = Arena.ofShared();
        MemorySegment stored = arena.allocate(1 << 16, 64);
        arena.close();
        assertThatCode(() -> KernelWarmup.warmShared(stored)).doesNotThrowAnyException();
        assertThatCode(() -> KernelWarmup.warmDense(DType.BF16, stored)).doesNotThrowAnyException();
    }
}
