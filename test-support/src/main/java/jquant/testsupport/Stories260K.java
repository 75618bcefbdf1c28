package jquant.testsupport;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.FloatBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;

/**
 * Karpathy's stories260K from {@code ../shared/models} (see its README): the llama2.c checkpoint and
 * its tokenizer as paths, the TinyStories text it is evaluated on, its run.c goldens, and its raw
 * float32 matrices for modules that have no checkpoint reader.
 *
 * <p>The legacy checkpoint is a 7 int32 header (dim 64, hidden 172, 5 layers, 8 heads, 4 kv heads,
 * vocab 512, seq 512), then token_embedding [512×64], rms_att [5×64], wq [5×64×64], wk [5×32×64],
 * wv [5×32×64], wo [5×64×64], rms_ffn [5×64], w1 [5×172×64], w2 [5×64×172], w3 [5×172×64], …
 */
public final class Stories260K {

    public static final int DIM = 64, HIDDEN = 172, LAYERS = 5, VOCAB = 512, KV_DIM = 32, HEADER_INTS = 7;

    /** The block matrices in file order, row-major [out][in]. */
    public enum Matrix {
        WQ(DIM, DIM), WK(KV_DIM, DIM), WV(KV_DIM, DIM), WO(DIM, DIM), W1(HIDDEN, DIM), W2(DIM, HIDDEN), W3(HIDDEN, DIM);

        public final int rows, cols;

        Matrix(int rows, int cols) { this.rows = rows; this.cols = cols; }
    }

    private final FloatBuffer floats;

    private Stories260K(FloatBuffer floats) { this.floats = floats; }

    /** {@code stories260K.bin}, the llama2.c legacy checkpoint. */
    public static Path model() {
        return SharedFiles.model("stories260K.bin");
    }

    /** {@code tok512.bin}, its llama2.c tokenizer. */
    public static Path tokenizer() {
        return SharedFiles.model("tok512.bin");
    }

    /** The TinyStories validation sample it scores 4.1202 on (ctx 256). */
    public static String text() throws IOException {
        return Files.readString(SharedFiles.data("tinystories-valid-sample.txt"), StandardCharsets.UTF_8);
    }

    /** The checkpoint's floats, read by offset. */
    public static Stories260K load() throws IOException {
        Path file = model();
        ByteBuffer bytes = ByteBuffer.wrap(Files.readAllBytes(file)).order(ByteOrder.LITTLE_ENDIAN);
        if (bytes.getInt(0) != DIM || bytes.getInt(4) != HIDDEN || bytes.getInt(8) != LAYERS) {
            throw new IllegalStateException(file + " is not the stories260K legacy checkpoint");
        }
        return new Stories260K(bytes.asFloatBuffer());
    }

    /** The layer's matrix, row-major [out][in]. */
    public float[] matrix(Matrix m, int layer) {
        long offset = HEADER_INTS + (long) VOCAB * DIM + (long) LAYERS * DIM; // token_embedding, rms_att
        for (Matrix before : Matrix.values()) {
            if (before == m) break;
            offset += (long) LAYERS * before.rows * before.cols;
            if (before == Matrix.WO) offset += (long) LAYERS * DIM; // rms_ffn sits between wo and w1
        }
        offset += (long) layer * m.rows * m.cols;
        float[] out = new float[m.rows * m.cols];
        floats.get(Math.toIntExact(offset), out);
        return out;
    }

    /** {@code layers.<layer>.<matrix>}. */
    public static String name(Matrix m, int layer) {
        return "layers." + layer + "." + m.name().toLowerCase();
    }

    /** The 200 golden token ids (positions 1..200) of a {@code golden_generation.txt}: the first line of exactly 200 integers. */
    public static int[] goldenIds(Path goldenFile) {
        try {
            for (String line : Files.readAllLines(goldenFile)) {
                String tail = line.substring(line.lastIndexOf(':') + 1).trim();
                if (tail.isEmpty() || !tail.matches("[0-9 ]+")) continue;
                int[] ids = Arrays.stream(tail.split(" +")).mapToInt(Integer::parseInt).toArray();
                if (ids.length == 200) return ids;
            }
            throw new IllegalStateException(goldenFile + " has no line of 200 token ids");
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** A little-endian float32 file (golden logits) as an array. */
    public static float[] floats(Path file) {
        try {
            ByteBuffer b = ByteBuffer.wrap(Files.readAllBytes(file)).order(ByteOrder.LITTLE_ENDIAN);
            float[] out = new float[b.remaining() / 4];
            b.asFloatBuffer().get(out);
            return out;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
