package jquant.quantize;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.FloatBuffer;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * Raw float32 matrices of the llama2.c legacy checkpoint {@code stories260K.bin} (see
 * shared/models/README.md): 7 int32 header (dim 64, hidden 172, 5 layers, 8 heads, 4 kv heads,
 * vocab 512, seq 512), then token_embedding [512×64], rms_att [5×64], wq [5×64×64], wk [5×32×64],
 * wv [5×32×64], wo [5×64×64], rms_ffn [5×64], w1 [5×172×64], w2 [5×64×172], w3 [5×172×64], …
 * Read by offset so this module needs no checkpoint reader.
 */
final class Stories260K {

    static final int DIM = 64, HIDDEN = 172, LAYERS = 5, VOCAB = 512, KV_DIM = 32, HEADER_INTS = 7;

    enum Matrix {
        WQ(DIM, DIM), WK(KV_DIM, DIM), WV(KV_DIM, DIM), WO(DIM, DIM), W1(HIDDEN, DIM), W2(DIM, HIDDEN), W3(HIDDEN, DIM);

        final int rows, cols;

        Matrix(int rows, int cols) { this.rows = rows; this.cols = cols; }
    }

    private final FloatBuffer floats;

    private Stories260K(FloatBuffer floats) { this.floats = floats; }

    static Stories260K load() throws IOException {
        Path file = Path.of(System.getProperty("jquant.shared"), "models", "stories260K.bin");
        ByteBuffer bytes = ByteBuffer.wrap(Files.readAllBytes(file)).order(ByteOrder.LITTLE_ENDIAN);
        if (bytes.getInt(0) != DIM || bytes.getInt(4) != HIDDEN || bytes.getInt(8) != LAYERS) {
            throw new IllegalStateException(file + " is not the stories260K legacy checkpoint");
        }
        return new Stories260K(bytes.asFloatBuffer());
    }

    /** The layer's matrix, row-major [out][in]. */
    float[] matrix(Matrix m, int layer) {
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

    static String name(Matrix m, int layer) {
        return "layers." + layer + "." + m.name().toLowerCase();
    }
}
