package jquant.core;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.lang.management.ManagementFactory;
import org.junit.jupiter.api.Test;

class MemoryTest {

    /** The memory available is a real figure: more than nothing, no more than the machine has. */
    @Test
    void systemAvailableIsWithinTheMachinesMemory() {
        long total = ((com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean()).getTotalMemorySize();
        assertThat(Memory.systemAvailable()).isPositive().isLessThanOrEqualTo(total);
    }

    @Test
    void sizesParseAsUsersWriteThemAndFormatInDecimalUnits() {
        assertThat(Memory.parse("12G")).isEqualTo(12L << 30);
        assertThat(Memory.parse(" 512m ")).isEqualTo(512L << 20);
        assertThat(Memory.parse("800k")).isEqualTo(800L << 10);
        assertThat(Memory.parse("1.5G")).isEqualTo(3L << 29);
        assertThatThrownBy(() -> Memory.parse("-1G")).hasMessageContaining("is not a size");
        assertThat(Memory.format(3_400_000_000L)).isEqualTo("3.4 GB");
        assertThat(Memory.format(512_000_000L)).isEqualTo("512 MB");
    }
}
