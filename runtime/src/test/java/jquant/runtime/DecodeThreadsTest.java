package jquant.runtime;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Path;
import jquant.core.WorkerPool;
import jquant.formats.Architecture;
import jquant.formats.DType;
import jquant.formats.ModelConfig;
import jquant.formats.synthetic.SyntheticCheckpoint;
import jquant.formats.synthetic.SyntheticLlama;
import org.junit.jupiter.api.Test;

/**
 * The forward pass gives the same bits on any number of threads: a synthetic Llama (float16 matrices on the native rows
 * where the library is built, two kv heads of 64 dimensions, four query heads each) long enough that its attention jobs
 * are split across the pool (from position 64 on), run on one thread and on three, every logit compared: step by step
 * (decode's attention, one item a kv head with its rotations and cache writes) and as one batch (prefill's).
 */
class DecodeThreadsTest {
    static final ModelConfig CONFIG = new ModelConfig(Architecture.LLAMA, 256, 512, 2, 8, 2, 64, 300, 128, 10000f, null, 1e-5f, false);
    static final int POSITIONS = 96;

    @Test
    void decodeAndBatchGiveTheSameBitsOnOneThreadAndOnThree() {
        int[] tokens = new int[POSITIONS];
        for (int i = 0; i < POSITIONS; i++) tokens[i] = (i * 37 + 11) % CONFIG.vocabSize();
        float[][] one = run(1, tokens), three = run(3, tokens);
        for (int i = 0; i < POSITIONS; i++) assertThat(bits(three[i])).as("decode, position %d", i).isEqualTo(bits(one[i]));
        assertThat(bits(three[POSITIONS])).as("one batch").isEqualTo(bits(one[POSITIONS]));
    }

    /** Each position's decode logits, then the logits of the whole batch fed at once. */
    private static float[][] run(int threads, int[] tokens) {
        try (WorkerPool pool = new WorkerPool(threads);
             SyntheticCheckpoint checkpoint = new SyntheticCheckpoint(Path.of("synthetic"), new SyntheticLlama(CONFIG, 3), DType.F16, null)) {
            Compute compute = Compute.vector().on(pool);
            LlamaModel model = LlamaModel.load(checkpoint, compute, LinearWeightsFactory.inPlace(compute));
            float[][] out = new float[tokens.length + 1][];
            InferenceSession session = model.newSession(tokens.length);
            for (int i = 0; i < tokens.length; i++) out[i] = session.decode(tokens[i], i);
            out[tokens.length] = model.newSession(tokens.length).forward(tokens, 0);
            return out;
        }
    }

    private static int[] bits(float[] a) {
        int[] b = new int[a.length];
        for (int i = 0; i < a.length; i++) b[i] = Float.floatToRawIntBits(a[i]);
        return b;
    }
}
