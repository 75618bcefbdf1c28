package jquant.runtime;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;

/**
 * Windows' hidden states between decoder layers (tokens × dim floats): what a layer-sequential run
 * (calibration, evaluation of a model larger than memory) carries from one layer to the next. Held in
 * memory when they fit the bound given, otherwise in a scratch file (deleted on close), one window read
 * and written back at a time.
 */
public final class HiddenStates implements AutoCloseable {
    private static final ValueLayout.OfFloat F32 = ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    private final int[] lengths;
    private final long[] offsets;
    private final int dim;
    private final float[][] held;
    private final Path scratch;
    private final FileChannel file;
    private final float[] buffer;
    private final ByteBuffer bytes;

    /**
     * @param lengths tokens of each window
     * @param bound   bytes the states may take in memory; beyond it they go to a scratch file in {@code folder}
     */
    public HiddenStates(int[] lengths, int dim, long bound, Path folder) throws IOException {
        this.lengths = lengths.clone();
        this.dim = dim;
        this.offsets = new long[lengths.length + 1];
        int longest = 0;
        for (int w = 0; w < lengths.length; w++) {
            offsets[w + 1] = offsets[w] + (long) lengths[w] * dim * Float.BYTES;
            longest = Math.max(longest, lengths[w]);
        }
        if (offsets[lengths.length] <= bound) {
            held = new float[lengths.length][];
            scratch = null;
            file = null;
            buffer = null;
            bytes = null;
        } else {
            held = null;
            scratch = Files.createTempFile(folder, ".jquant-hidden-", ".tmp");
            file = FileChannel.open(scratch, StandardOpenOption.READ, StandardOpenOption.WRITE, StandardOpenOption.DELETE_ON_CLOSE);
            buffer = new float[longest * dim];
            bytes = ByteBuffer.allocateDirect(longest * dim * Float.BYTES).order(ByteOrder.LITTLE_ENDIAN);
        }
    }

    /** Bytes all windows' states take. */
    public static long bytes(int tokens, int dim) {
        return (long) tokens * dim * Float.BYTES;
    }

    /** Whether the states live in a scratch file. */
    public boolean spilled() {
        return file != null;
    }

    /** A buffer to fill window {@code w}'s states into (its own array in memory; the shared buffer when spilled). */
    public float[] buffer(int w) {
        if (held == null) return buffer;
        if (held[w] == null) held[w] = new float[lengths[w] * dim];
        return held[w];
    }

    /** Window {@code w}'s states, as last {@link #put}. */
    public float[] get(int w) {
        if (held != null) return held[w];
        try {
            bytes.clear().limit(lengths[w] * dim * Float.BYTES);
            while (bytes.hasRemaining()) {
                if (file.read(bytes, offsets[w] + bytes.position()) < 0) throw new IOException(scratch + ": ended early");
            }
            MemorySegment.copy(MemorySegment.ofBuffer(bytes.flip()), F32, 0, buffer, 0, lengths[w] * dim);
            return buffer;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** Stores window {@code w}'s states from {@code states} (what {@link #buffer} or {@link #get} gave). */
    public void put(int w, float[] states) {
        if (held != null) {
            held[w] = states;
            return;
        }
        try {
            MemorySegment.copy(states, 0, MemorySegment.ofBuffer(bytes.clear()), F32, 0, lengths[w] * dim);
            bytes.limit(lengths[w] * dim * Float.BYTES);
            while (bytes.hasRemaining()) file.write(bytes, offsets[w] + bytes.position());
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    @Override
    public void close() throws IOException {
        if (file != null) file.close();
    }
}
