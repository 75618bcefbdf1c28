package jquant.runtime.nativelib;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assumptions.assumeThat;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import org.junit.jupiter.api.Test;

/** Copies' memory: where it lies (2 MiB boundaries, shared slabs), that copies never overlap, and what is refused. */
class CopyMemoryTest {

    private static final long MIB = 1L << 20;

    private static boolean linux() {
        return System.getProperty("os.name", "").toLowerCase(Locale.ROOT).contains("linux");
    }

    @Test
    void copiesOfATensorsSizeFollowOneAnotherInASlabWithoutOverlapping() {
        List<MemorySegment> copies = new ArrayList<>();
        long[] sizes = {3 * MIB + 544, 1_114_112, 139_264, 139_264, 3 * MIB + 17, 100};
        for (int round = 0; round < 3; round++) for (long size : sizes) copies.add(CopyMemory.allocate(size, 64));
        for (int i = 0; i < copies.size(); i++) {
            MemorySegment c = copies.get(i);
            assertThat(c.byteSize()).isEqualTo(sizes[i % sizes.length]);
            assertThat(c.address() % 64).isZero();
            c.fill((byte) i);
        }
        for (int i = 0; i < copies.size(); i++) {
            MemorySegment c = copies.get(i);
            for (long at : new long[] {0, c.byteSize() / 2, c.byteSize() - 1}) assertThat(c.get(ValueLayout.JAVA_BYTE, at)).isEqualTo((byte) i);
            for (int j = i + 1; j < copies.size(); j++) {
                MemorySegment d = copies.get(j);
                assertThat(c.address() + c.byteSize() <= d.address() || d.address() + d.byteSize() <= c.address()).as("copies %d and %d overlap", i, j).isTrue();
            }
        }
        if (linux()) {
            // In a slab, each copy after the one before it (the slab's first copy starts on a 2 MiB boundary).
            for (int i = 1; i < copies.size(); i++) {
                MemorySegment before = copies.get(i - 1), c = copies.get(i);
                long next = (before.address() + before.byteSize() + 63) & -64L;
                assertThat(c.address() == next || c.address() % (2 * MIB) == 0).as("copy %d follows copy %d or opens a slab", i, i - 1).isTrue();
            }
        }
    }

    @Test
    void aLargeCopyHasAMappingOfItsOwnOnA2MiBBoundary() {
        assumeThat(linux()).as("Linux: anonymous mappings").isTrue();
        MemorySegment big = CopyMemory.allocate(40 * MIB + 4097, 64);
        assertThat(big.byteSize()).isEqualTo(40 * MIB + 4097);
        assertThat(big.address() % (2 * MIB)).isZero();
        big.fill((byte) 7);
        assertThat(big.get(ValueLayout.JAVA_BYTE, big.byteSize() - 1)).isEqualTo((byte) 7);
    }

    @Test
    void anAlignmentAbove4KiBOrNotAPowerOfTwoIsRefused() {
        assertThatThrownBy(() -> CopyMemory.allocate(1000, 8192)).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("8192");
        assertThatThrownBy(() -> CopyMemory.allocate(1000, 48)).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("48");
    }
}
