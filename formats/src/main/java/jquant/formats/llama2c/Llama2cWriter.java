package jquant.formats.llama2c;

import jquant.formats.AtomicOutput;
import jquant.formats.ModelConfig;
import jquant.formats.TensorKind;
import jquant.formats.Vocabulary;

import java.io.IOException;
import java.io.OutputStream;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.function.BiFunction;

/**
 * Writes llama2.c legacy (version 0) checkpoints and {@code tokenizer.bin} files, the layouts that
 * {@link Llama2cCheckpoint} and {@link Llama2cTokenizerReader} document. Both are written atomically.
 */
public final class Llama2cWriter {
    private Llama2cWriter() {}

    /**
     * Writes a legacy checkpoint. {@code weights} gives the float32 values of each canonical tensor
     * (row-major {@code [out][in]}, q/k in adjacent-pair RoPE order); {@code HEAD} is asked for only when
     * the model is untied. The unused freq_cis tables are written as llama2.c's exporter computes them.
     */
    public static void writeCheckpoint(Path target, ModelConfig c, BiFunction<TensorKind, Integer, float[]> weights) throws IOException {
        AtomicOutput.write(target, out -> {
            ByteBuffer header = ByteBuffer.allocate(28).order(ByteOrder.LITTLE_ENDIAN);
            int vocab = c.tiedEmbeddings() ? c.vocabSize() : -c.vocabSize();
            for (int v : new int[]{c.dim(), c.hiddenDim(), c.layers(), c.heads(), c.kvHeads(), vocab, c.maxSeqLen()}) header.putInt(v);
            out.write(header.array());
            floats(out, weights.apply(TensorKind.EMBEDDING, 0));
            for (TensorKind k : new TensorKind[]{TensorKind.ATTN_NORM, TensorKind.WQ, TensorKind.WK, TensorKind.WV, TensorKind.WO,
                    TensorKind.FFN_NORM, TensorKind.W_GATE, TensorKind.W_DOWN, TensorKind.W_UP}) {
                for (int l = 0; l < c.layers(); l++) floats(out, weights.apply(k, l));
            }
            floats(out, weights.apply(TensorKind.FINAL_NORM, 0));
            int half = c.headDim() / 2;
            float[] re = new float[c.maxSeqLen() * half];
            float[] im = new float[re.length];
            for (int pos = 0; pos < c.maxSeqLen(); pos++) {
                for (int i = 0; i < half; i++) {
                    double freq = 1.0 / Math.pow(c.ropeTheta(), (2.0 * i) / c.headDim());
                    re[pos * half + i] = (float) Math.cos(pos * freq);
                    im[pos * half + i] = (float) Math.sin(pos * freq);
                }
            }
            floats(out, re);
            floats(out, im);
            if (!c.tiedEmbeddings()) floats(out, weights.apply(TensorKind.HEAD, 0));
        });
    }

    /** Writes a llama2.c tokenizer: pieces go back to llama2.c's spelling (space for {@code ▁}, {@code "\n<s>\n"}). */
    public static void writeTokenizer(Path target, Vocabulary v) throws IOException {
        AtomicOutput.write(target, out -> {
            byte[][] texts = new byte[v.size()][];
            int maxLen = 0;
            for (int i = 0; i < v.size(); i++) {
                String p = v.pieces().get(i);
                String text = i == v.bos() && p.equals("<s>") ? "\n<s>\n"
                        : i == v.eos() && p.equals("</s>") ? "\n</s>\n" : p.replace('\u2581', ' ');
                texts[i] = text.getBytes(StandardCharsets.UTF_8);
                maxLen = Math.max(maxLen, texts[i].length);
            }
            ByteBuffer b = ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN);
            out.write(b.putInt(0, maxLen).array(), 0, 4);
            for (int i = 0; i < v.size(); i++) {
                b.putFloat(0, v.scores()[i]).putInt(4, texts[i].length);
                out.write(b.array());
                out.write(texts[i]);
            }
        });
    }

    private static void floats(OutputStream out, float[] values) throws IOException {
        ByteBuffer b = ByteBuffer.allocate(values.length * 4).order(ByteOrder.LITTLE_ENDIAN);
        b.asFloatBuffer().put(values);
        out.write(b.array());
    }
}
