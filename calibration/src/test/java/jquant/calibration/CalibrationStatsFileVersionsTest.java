package jquant.calibration;

import jquant.formats.CheckpointException;
import jquant.formats.gguf.GgufFile;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * Stats files of earlier versions, as the writers of their time wrote them (a tiny seeded model, one α
 * per group searched at {@code reference_bits} = 4; the fuzz module's seeds): version 1 without a
 * checksum, version 2 with one. Both read as stats of one budget, 4 bits.
 */
class CalibrationStatsFileVersionsTest {

    private static Path resource(String name, Path dir) throws IOException {
        try (InputStream in = CalibrationStatsFileVersionsTest.class.getResourceAsStream(name)) {
            Path file = dir.resolve(name);
            Files.copy(in, file);
            return file;
        }
    }

    private static long version(Path file) throws IOException {
        try (GgufFile gguf = GgufFile.open(file)) {
            return gguf.metadata().get("jquant.calibration.version").asLong();
        }
    }

    @Test
    void versionsOneAndTwoReadAsTheirReferenceWidthsBudget(@TempDir Path dir) throws IOException {
        Path v1 = resource("stats-version-1.gguf", dir), v2 = resource("stats-version-2.gguf", dir);
        assertThat(version(v1)).isEqualTo(1);
        assertThat(version(v2)).isEqualTo(2);
        CalibrationStats one = CalibrationStatsFile.read(v1), two = CalibrationStatsFile.read(v2);
        for (CalibrationStats stats : List.of(one, two)) {
            assertThat(stats.budgets()).containsExactly(4.0);
            assertThat(stats.hasSecondMoments()).isFalse();
            assertThat(stats.groups()).isNotEmpty().allSatisfy(g -> {
                assertThat(g.alphas()).hasSize(1);
                assertThat(g.alpha(4.0).alpha()).isBetween(0f, 1f);
                assertThat(g.alpha(4.0).error()).isLessThanOrEqualTo(g.alpha(4.0).unsmoothedError());
            });
            assertThat(stats.alphas(4.0)).hasSize(stats.groups().size());
            assertThat(stats.hasProbeTokens()).isFalse();   // written before the loss probe's sample was recorded
            assertThatThrownBy(() -> stats.alphas(5.0)).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContainingAll("budgets 4", "not for 5", "--alpha");
        }
        // version 2 is version 1 with a checksum: the same content
        assertThat(two).isEqualTo(one);

        // written again, they are version 4 and read back the same
        Path again = dir.resolve("again.gguf");
        CalibrationStatsFile.write(two, again);
        assertThat(version(again)).isEqualTo(CalibrationStatsFile.VERSION).isEqualTo(4);
        assertThat(CalibrationStatsFile.read(again)).isEqualTo(two);
        try (GgufFile gguf = GgufFile.open(again)) {
            assertThat(gguf.metadata()).doesNotContainKey("jquant.calibration.probe_tokens");
        }
    }

    /**
     * Version 3 kept E[x·xᵀ] as the whole D×D matrix (the fuzz module's seed, calibrated with second moments):
     * it reads with its moments left in the file, and written again as version 4 (upper triangles) it holds
     * the same values.
     */
    @Test
    void versionThreesSquareMomentsReadAsTheSameMatrices(@TempDir Path dir) throws IOException {
        Path v3 = resource("stats-version-3.gguf", dir);
        assertThat(version(v3)).isEqualTo(3);
        CalibrationStats three = CalibrationStatsFile.read(v3);
        assertThat(three.hasSecondMoments()).isTrue();
        try (GgufFile gguf = GgufFile.open(v3)) {
            for (GroupStats g : three.groups()) {
                float[] square = gguf.tensors().get(g.name() + ".xx_mean").toFloats();
                assertThat(g.secondMoment().full(null)).as(g.name()).isEqualTo(square);
            }
        }
        Path again = dir.resolve("again.gguf");
        CalibrationStatsFile.write(three, again);
        assertThat(version(again)).isEqualTo(4);
        CalibrationStats four = CalibrationStatsFile.read(again);
        assertThat(four).isEqualTo(three);
        assertThat(four.groups().getFirst().secondMoment()).isInstanceOf(SecondMoment.Stored.class);
    }

    @Test
    void versionTwosChecksumIsVerified(@TempDir Path dir) throws IOException {
        Path v2 = resource("stats-version-2.gguf", dir);
        byte[] bytes = Files.readAllBytes(v2);
        long dataOffset;
        try (GgufFile gguf = GgufFile.open(v2)) {
            dataOffset = gguf.dataOffset();
        }
        bytes[(int) dataOffset + 5] ^= 0x10;
        Path damaged = Files.write(dir.resolve("damaged.gguf"), bytes);
        assertThatThrownBy(() -> CalibrationStatsFile.read(damaged)).isInstanceOf(CheckpointException.class)
                .hasMessageContainingAll("damaged.gguf", "checksum mismatch");
    }
}
