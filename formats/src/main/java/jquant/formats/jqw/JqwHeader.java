package jquant.formats.jqw;

import java.nio.charset.StandardCharsets;
import jquant.formats.FileFormat;

/**
 * The fixed 64-byte header that starts every jquant packed file ({@code docs/jqw-format.md}).
 *
 * <pre>
 * offset size field
 *      0    8 magic "JQUANTPK"
 *      8    4 u32 version (2; 1 is read: its weightlet rows end in whole groups, see TensorEncoding)
 *     12    4 u32 header size (64)
 *     16    8 u64 metadata offset   (JSON, UTF-8, after the data)
 *     24    8 u64 metadata length
 *     32    4 u32 metadata CRC-32C
 *     36    4 u32 reserved (0)
 *     40    8 u64 file length
 *     48   16 zero
 * </pre>
 * All integers little-endian. Data starts at 64; every part is 64-byte aligned.
 */
final class JqwHeader {
    static final FileFormat FORMAT = new FileFormat("jquant packed file", "JQUANTPK", 1, 2);
    static final byte[] MAGIC = FORMAT.identifier().getBytes(StandardCharsets.US_ASCII);
    static final int SIZE = 64;
    static final int ALIGNMENT = 64;
    static final int OFF_VERSION = 8;
    static final int OFF_HEADER_SIZE = 12;
    static final int OFF_META_OFFSET = 16;
    static final int OFF_META_LENGTH = 24;
    static final int OFF_META_CRC = 32;
    static final int OFF_FILE_LENGTH = 40;

    private JqwHeader() {}
}
