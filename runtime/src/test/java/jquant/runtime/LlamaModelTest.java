package jquant.runtime;

import jquant.formats.Checkpoint;
import jquant.formats.Checkpoints;
import jquant.formats.RopeConvention;
import jquant.formats.Tensor;
import jquant.formats.TensorKind;
import jquant.testsupport.SharedFiles;
import jquant.testsupport.Slow;
import jquant.testsupport.Stories260K;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.stream.IntStream;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.offset;

@Slow
class LlamaModelTest {
    private static final int[] PROMPT = {1, 403, 407, 261, 378};

    /** Open for the whole class: a model reads its weights from the checkpoint's mapping. */
    private static Checkpoint stories;

    @org.junit.jupiter.api.BeforeAll
    static void open() throws IOException {
        stories = Checkpoints.open(SharedFiles.model("stories260K.bin"));
    }

    @org.junit.jupiter.api.AfterAll
    static void close() {
        if (stories != null) stories.close();
    }

    static LlamaModel stories260K(Compute compute) {
        return LlamaModel.load(stories, compute, LinearWeightsFactory.inPlace(compute));
    }

    /** The prompt (minus BOS) followed by the greedy continuation: positions 1..200, as the golden files list them. */
    private static int[] greedy200(LlamaModel model) {
        int[] continuation = Generation.generate(model, PROMPT, 200 - (PROMPT.length - 1), Sampler.greedy(), -1, t -> {});
        return IntStream.concat(Arrays.stream(PROMPT, 1, PROMPT.length), Arrays.stream(continuation)).toArray();
    }

    @Test
    void stories260kLogitsMatchRunC() throws IOException {
        float[] golden = Stories260K.floats(SharedFiles.model("golden_logits_pos0-3.f32"));
        for (Compute compute : List.of(Compute.vector(), Compute.scalar())) {
            float[] logits = stories260K(compute).newSession().forward(new int[] {1, 403, 407, 261}, 0);
            assertThat(logits).hasSameSizeAs(golden);
            for (int i = 0; i < golden.length; i++) {
                assertThat(logits[i]).as("%s logit %d of position %d", compute.kernels().getClass().getSimpleName(), i % 512, i / 512)
                        .isCloseTo(golden[i], offset(1e-4f * Math.max(1f, Math.abs(golden[i]))));
            }
        }
    }

    @Test
    void stories260kGreedyGenerationIsGolden() throws IOException {
        int[] golden = Stories260K.goldenIds(SharedFiles.model("golden_generation.txt"));
        assertThat(greedy200(stories260K(Compute.vector()))).containsExactly(golden);
        assertThat(greedy200(stories260K(Compute.scalar()))).containsExactly(golden);
    }

    @Test
    void greedyTextDecodesToTheGoldenStdout() throws IOException {
        try (Checkpoint c = Checkpoints.open(SharedFiles.model("stories260K.bin"))) {
            Tokenizer tokenizer = Tokenizer.of(c.vocabulary().orElseThrow());
            int[] prompt = tokenizer.encode("Once upon a time");
            assertThat(prompt).containsExactly(PROMPT);
            int[] ids = greedy200(LlamaModel.load(c));
            assertThat(tokenizer.decode(ids)).startsWith(
                    "Once upon a time, there was a little girl named Lily. She loved to play outside in the park.")
                    .endsWith("Lily didn't want to help her mom, so she");
        }
    }

    @Test
    void batchedForwardEqualsTokenByToken() throws IOException {
        LlamaModel model = stories260K(Compute.vector());
        int[] tokens = Arrays.copyOf(Stories260K.goldenIds(SharedFiles.model("golden_generation.txt")), 40);
        int vocab = model.config().vocabSize();
        float[] batched = model.newSession().forward(tokens, 0);
        InferenceSession stepwise = model.newSession();
        for (int i = 0; i < tokens.length; i++) {
            float[] one = stepwise.decode(tokens[i], i);
            // Each output element is summed in the same order either way; what remains is the JIT: interpreted and
            // compiled Vector API code round reduceLanes and EXP differently (observed ≤ 3e-6 on logits of size ~10).
            assertThat(Arrays.copyOfRange(batched, i * vocab, (i + 1) * vocab)).as("position %d", i)
                    .containsExactly(one, offset(1e-4f));
        }
        // a batch continued from a filled cache, and a batch returning only its last rows
        InferenceSession split = model.newSession();
        split.forward(Arrays.copyOf(tokens, 25), 0, 25);
        float[] tail = split.forward(Arrays.copyOfRange(tokens, 25, 40), 25, 10);
        assertThat(tail).containsExactly(Arrays.copyOfRange(batched, 35 * vocab, 40 * vocab), offset(1e-4f));
    }

    @Test
    void rotateHalfCheckpointGivesTheSameLogits() throws IOException {
        // Permute q/k rows as Hugging Face's exporter does (llama2.c permute_original) and run with ROTATE_HALF.
        Compute compute = Compute.vector();
        try (Checkpoint c = Checkpoints.open(SharedFiles.model("stories260K.bin"))) {
            LlamaModel adjacent = LlamaModel.load(c, compute, LinearWeightsFactory.dense(compute));
            int headDim = c.config().headDim();
            LinearWeightsFactory permuted = (kind, layer, tensor) -> {
                float[] w = tensor.toFloats();
                if (kind == TensorKind.WQ || kind == TensorKind.WK) w = toRotateHalf(w, tensor.rows() / headDim, headDim, tensor.cols());
                return new DenseF32Weights(w, tensor.rows(), tensor.cols(), compute);
            };
            LlamaModel rotateHalf = rebuild(c, RopeConvention.ROTATE_HALF, permuted, compute);
            LlamaModel wrongRope = rebuild(c, RopeConvention.ADJACENT_PAIRS, permuted, compute);
            int[] tokens = {1, 403, 407, 261, 378, 432, 383, 286};
            float[] expected = adjacent.newSession().forward(tokens, 0);
            float[] actual = rotateHalf.newSession().forward(tokens, 0);
            for (int i = 0; i < expected.length; i++) {
                assertThat(actual[i]).isCloseTo(expected[i], offset(1e-4f * Math.max(1f, Math.abs(expected[i]))));
            }
            // control: the permuted weights with the wrong pairing are far off
            float[] wrong = wrongRope.newSession().forward(tokens, 0);
            double maxDiff = 0;
            for (int i = 0; i < expected.length; i++) maxDiff = Math.max(maxDiff, Math.abs(wrong[i] - expected[i]));
            assertThat(maxDiff).isGreaterThan(0.1);
        }
    }

    /** The inverse of {@link RopeConvention#toAdjacentPairs}: row {@code h*hd + p*hd/2 + i} ← row {@code h*hd + 2i + p}. */
    private static float[] toRotateHalf(float[] w, int heads, int headDim, int cols) {
        float[] out = new float[w.length];
        for (int h = 0; h < heads; h++) {
            for (int i = 0; i < headDim / 2; i++) {
                for (int p = 0; p < 2; p++) {
                    System.arraycopy(w, (h * headDim + 2 * i + p) * cols, out, (h * headDim + p * headDim / 2 + i) * cols, cols);
                }
            }
        }
        assertThat(RopeConvention.toAdjacentPairs(out, heads, headDim, cols)).containsExactly(w);
        return out;
    }

    private static LlamaModel rebuild(Checkpoint c, RopeConvention rope, LinearWeightsFactory weights, Compute compute) {
        List<LlamaModel.Layer> layers = new ArrayList<>();
        for (int l = 0; l < c.config().layers(); l++) {
            layers.add(new LlamaModel.Layer(
                    c.tensor(TensorKind.ATTN_NORM, l).toFloats(),
                    weights.create(TensorKind.WQ, l, c.tensor(TensorKind.WQ, l)),
                    weights.create(TensorKind.WK, l, c.tensor(TensorKind.WK, l)),
                    weights.create(TensorKind.WV, l, c.tensor(TensorKind.WV, l)),
                    weights.create(TensorKind.WO, l, c.tensor(TensorKind.WO, l)),
                    c.tensor(TensorKind.FFN_NORM, l).toFloats(),
                    weights.create(TensorKind.W_GATE, l, c.tensor(TensorKind.W_GATE, l)),
                    weights.create(TensorKind.W_UP, l, c.tensor(TensorKind.W_UP, l)),
                    weights.create(TensorKind.W_DOWN, l, c.tensor(TensorKind.W_DOWN, l))));
        }
        Tensor head = c.tensor(TensorKind.HEAD, 0);
        return new LlamaModel(c.config(), rope, TokenEmbedding.of(c.tensor(TensorKind.EMBEDDING, 0)), layers,
                c.tensor(TensorKind.FINAL_NORM, 0).toFloats(), weights.create(TensorKind.HEAD, 0, head), compute);
    }

    @Test
    void badInputsAreRejectedWithClearMessages() throws IOException {
        LlamaModel model = stories260K(Compute.vector());
        InferenceSession session = model.newSession(16);
        assertThatThrownBy(() -> session.forward(new int[] {1, 512}, 0)).hasMessageContaining("token 512 at index 1 outside the vocabulary");
        assertThatThrownBy(() -> session.forward(new int[] {1}, 3)).hasMessageContaining("leaves a gap");
        assertThatThrownBy(() -> session.forward(new int[17], 0)).hasMessageContaining("exceed the context of 16");
        assertThatThrownBy(() -> model.newSession(513)).hasMessageContaining("outside [1, 512]");
        assertThatThrownBy(() -> Generation.generate(model, new int[] {1}, 513, Sampler.greedy(), -1, t -> {}))
                .hasMessageContaining("exceed the model's context of 512");
        try (Checkpoint c = Checkpoints.open(SharedFiles.model("stories260K.bin"))) {
            Compute compute = Compute.vector();
            LinearWeightsFactory transposedWk = (kind, layer, t) -> kind == TensorKind.WK
                    ? new DenseF32Weights(t.toFloats(), t.cols(), t.rows(), compute)
                    : new DenseF32Weights(t.toFloats(), t.rows(), t.cols(), compute);
            assertThatThrownBy(() -> LlamaModel.load(c, compute, transposedWk))
                    .hasMessageContaining("blk.0.attn_k is 64×32, expected 32×64");
        }
    }

    @Test
    void seededSamplingIsReproducibleAndDiffersFromGreedy() throws IOException {
        LlamaModel model = stories260K(Compute.vector());
        int[] a = Generation.generate(model, PROMPT, 60, Sampler.temperature(1.0f, 42), -1, t -> {});
        int[] b = Generation.generate(model, PROMPT, 60, Sampler.temperature(1.0f, 42), -1, t -> {});
        int[] greedy = Generation.generate(model, PROMPT, 60, Sampler.greedy(), -1, t -> {});
        assertThat(a).containsExactly(b).isNotEqualTo(greedy);
        List<Integer> streamed = new ArrayList<>();
        int[] stopped = Generation.generate(model, PROMPT, 60, Sampler.greedy(), greedy[10], streamed::add);
        int firstStop = Arrays.stream(greedy).boxed().toList().indexOf(greedy[10]);
        assertThat(stopped).containsExactly(Arrays.copyOf(greedy, firstStop));
        assertThat(streamed).containsExactlyElementsOf(Arrays.stream(stopped).boxed().toList());
        assertThatThrownBy(() -> Sampler.temperature(-1f, 1)).hasMessageContaining("temperature");
    }
}
