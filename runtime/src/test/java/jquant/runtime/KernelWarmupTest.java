package jquant.runtime;

import static org.assertj.core.api.Assertions.assertThatCode;

import org.junit.jupiter.api.Test;

/** The warm-up runs every kernel on its own small inputs without a failure (it runs unobserved on a daemon thread). */
class KernelWarmupTest {
    @Test
    void everyKernelRunsOnTheWarmUpInputs() {
        assertThatCode(KernelWarmup::warm).doesNotThrowAnyException();
    }
}
