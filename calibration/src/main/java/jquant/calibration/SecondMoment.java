package jquant.calibration;

import jquant.formats.CheckpointException;
import jquant.formats.MappedFile;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.nio.file.Path;
import java.util.zip.CRC32C;

/**
 * E[x·xᵀ] of one group's input over the calibration tokens, what GPTQ rounding needs: symmetric D×D,
 * kept as its upper triangle (row i: columns i … D−1; D(D+1)/2 floats). It is the one statistic that
 * grows with the square of a layer's width (a 70B model's ffn_down input: 28,672²/2 floats, 1.6 GB), so
 * stats read from a file leave it there and read one group's when asked ({@link #full}).
 */
public sealed interface SecondMoment {
    ValueLayout.OfFloat F32 = ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    /** The largest D whose full D×D matrix one Java array holds. */
    int MAX_CHANNELS = 46_340;

    /** D, the input channels. */
    int channels();

    /**
     * Copies row i's upper part (columns i … D−1) of every row to {@code target}: at
     * {@link #rowStart} (a triangle) or, with {@code square}, at {@code i·D + i} (a full matrix).
     */
    void copyRows(float[] target, boolean square);

    /** The upper triangle, row by row: D(D+1)/2 floats. */
    default float[] upperTriangle() {
        float[] t = new float[Math.toIntExact(triangleSize(channels()))];
        copyRows(t, false);
        return t;
    }

    /**
     * The full matrix, row-major D×D, entry (i, j) divided by {@code f_i·f_j} when {@code factors} are
     * given (the moment of a smoothed input x/f), or as stored when they are null.
     */
    default float[] full(float[] factors) {
        int d = channels();
        if (d > MAX_CHANNELS) throw new IllegalArgumentException("E[x·xᵀ] of " + d + " channels does not fit one array (at most " + MAX_CHANNELS + ")");
        float[] full = new float[d * d];
        copyRows(full, true);
        for (int i = 0; i < d; i++) {
            for (int j = i; j < d; j++) {
                float v = factors == null ? full[i * d + j] : (float) (full[i * d + j] / ((double) factors[i] * factors[j]));
                full[i * d + j] = v;
                full[j * d + i] = v;
            }
        }
        return full;
    }

    /** Floats of the upper triangle of a D×D matrix. */
    static long triangleSize(int channels) {
        return (long) channels * (channels + 1) / 2;
    }

    /** Where row i of the upper triangle starts: {@code Σ_{r<i} (D − r)}. */
    static long rowStart(int channels, int row) {
        return (long) row * channels - (long) row * (row - 1) / 2;
    }

    /** Whether two moments hold the same values (reads both: for tests and small models). */
    static boolean sameValues(SecondMoment a, SecondMoment b) {
        if (a == b) return true;
        if (a == null || b == null || a.channels() != b.channels()) return false;
        return java.util.Arrays.equals(a.upperTriangle(), b.upperTriangle());
    }

    /** A moment held in memory, as calibration produces it. */
    record Held(int channels, float[] triangle) implements SecondMoment {
        public Held {
            if (triangle.length != triangleSize(channels)) {
                throw new IllegalArgumentException(triangle.length + " floats are not the upper triangle of a " + channels + "×" + channels + " matrix");
            }
        }

        @Override
        public void copyRows(float[] target, boolean square) {
            for (int i = 0; i < channels; i++) {
                System.arraycopy(triangle, (int) rowStart(channels, i), target, square ? i * channels + i : (int) rowStart(channels, i), channels - i);
            }
        }
    }

    /**
     * A moment left in its stats file, mapped and read when asked (a damaged or changed file fails the read
     * with an {@link java.io.UncheckedIOException} around the {@link CheckpointException} naming it). {@code square}: stored as the whole
     * D×D matrix (version 3 files) rather than its triangle; {@code crc}: the CRC32C its bytes must have,
     * checked on every read, or -1 where the file's own checksum covered them when the file was read.
     */
    record Stored(Path file, long offset, int channels, boolean square, long crc) implements SecondMoment {
        @Override
        public void copyRows(float[] target, boolean squareTarget) {
            try (MappedFile mapped = MappedFile.open(file)) {
                long bytes = 4L * (square ? (long) channels * channels : triangleSize(channels));
                if (offset < 0 || offset + bytes > mapped.size()) {
                    throw new CheckpointException(file, "E[x·xᵀ] at byte " + offset + " (" + bytes + " bytes) lies past the end of the file");
                }
                MemorySegment data = mapped.segment().asSlice(offset, bytes);
                CRC32C crc32 = new CRC32C();
                for (int i = 0; i < channels; i++) {
                    long start = square ? (long) i * channels + i : rowStart(channels, i);
                    MemorySegment row = data.asSlice(4 * start, 4L * (channels - i));
                    if (crc >= 0) crc32.update(row.asByteBuffer());
                    MemorySegment.copy(row, F32, 0, target, squareTarget ? i * channels + i : (int) rowStart(channels, i), channels - i);
                }
                if (crc >= 0 && crc32.getValue() != crc) {
                    throw new CheckpointException(file, String.format("checksum mismatch in E[x·xᵀ] at byte %d: the file says %08x, its content gives %08x "
                            + "(the file was changed or damaged)", offset, crc, crc32.getValue()));
                }
            } catch (CheckpointException e) {
                throw new java.io.UncheckedIOException(e);
            }
        }
    }
}
