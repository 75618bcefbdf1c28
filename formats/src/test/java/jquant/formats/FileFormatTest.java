package jquant.formats;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

/** The versioned files' shared checks: identifier, version range and checksum, each a one-line reason. */
class FileFormatTest {
    private static final FileFormat PLAN = new FileFormat("bit plan", "jquant-bitplan", 1, 2);
    private static final FileFormat ONE = new FileFormat("jquant packed file", "JQUANTPK", 1, 1);

    @Test
    void theIdentifierMustBeThisFormats() {
        PLAN.checkIdentifier("format", "jquant-bitplan");
        assertThatThrownBy(() -> PLAN.checkIdentifier("format", "other"))
                .hasMessage("not a bit plan (format is \"other\", expected \"jquant-bitplan\")");
        assertThatThrownBy(() -> PLAN.checkIdentifier("general.architecture", null))
                .hasMessage("not a bit plan (general.architecture is missing, expected \"jquant-bitplan\")");
        assertThatThrownBy(() -> PLAN.checkIdentifier("general.architecture", 7L))
                .hasMessage("not a bit plan (general.architecture is 7, expected \"jquant-bitplan\")");
        assertThat(ONE.notThisFormat("bad magic or too short")).hasMessage("not a jquant packed file (bad magic or too short)");
    }

    @Test
    void everyVersionFromTheOldestToTheCurrentReads() {
        assertThat(PLAN.checkVersion(1)).isEqualTo(1);
        assertThat(PLAN.checkVersion(2)).isEqualTo(2);
        assertThatThrownBy(() -> PLAN.checkVersion(3)).hasMessage("bit plan version 3 is not supported (1 to 2 are)");
        assertThatThrownBy(() -> PLAN.checkVersion(0)).hasMessage("bit plan version 0 is not supported (1 to 2 are)");
        assertThatThrownBy(() -> ONE.checkVersion(0xFFFF_FFFFL)).hasMessage("jquant packed file version 4294967295 is not supported (only 1 is)");
        assertThatThrownBy(() -> new FileFormat("x", "x", 3, 2)).isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void checksumsAreCrc32cAndAMismatchNamesThePart() {
        // The CRC-32C check value (RFC 3720, appendix B.4: the digits 1 to 9).
        assertThat(FileFormat.crc32c(MemorySegment.ofArray("123456789".getBytes(StandardCharsets.US_ASCII)))).isEqualTo(0xE3069283L);
        FileFormat.checkChecksum("layer layer.0", 0xE3069283L, 0xE3069283L);
        assertThatThrownBy(() -> FileFormat.checkChecksum("layer layer.0", 0xE3069283L, 0x1L)).hasMessage(
                "checksum mismatch in layer layer.0: the file says e3069283, its content gives 00000001 (the file was changed or damaged)");
    }
}
