package jquant.runtime;

import jquant.formats.Checkpoint;
import jquant.formats.Checkpoints;
import jquant.formats.TensorKind;
import jquant.testsupport.SharedFiles;
import jquant.testsupport.Slow;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.offset;

@Slow
class PerplexityTest {

    private static Tokenizer tokenizer(Checkpoint c) {
        return Tokenizer.of(c.vocabulary().orElseThrow());
    }

    @Test
    void stories260kReproducesLlamaCppOnTinyStories() throws IOException {
        String text = Files.readString(SharedFiles.data("tinystories-valid-sample.txt"));
        try (Checkpoint c = Checkpoints.open(SharedFiles.model("stories260K.bin"))) {
            List<Integer> windowsSeen = new ArrayList<>();
            Perplexity.Result r = new Perplexity(256).evaluate(LlamaModel.load(c), tokenizer(c), text,
                    (done, total, ppl) -> windowsSeen.add(done));
            // llama-perplexity -c 256 on stories260K-f32.gguf: 145,758 tokens, 569 chunks, 72,263 predictions, PPL 4.1202 ± 0.02807
            assertThat(r.tokens()).isEqualTo(145_758);
            assertThat(r.windows()).isEqualTo(569);
            assertThat(r.scored()).isEqualTo(72_263);
            assertThat(Math.round(r.perplexity() * 1000) / 1000.0).isEqualTo(4.120);
            assertThat(r.stderr()).isCloseTo(0.02807, offset(0.00005));
            assertThat(windowsSeen).hasSize(569).startsWith(1, 2).endsWith(569);
        }
    }

    /**
     * One layer at a time over all windows (hidden states in memory, and spilled to a scratch file) gives
     * window-by-window's figures to the bit, against itself and against a base, every stage released once.
     */
    @Test
    void layerwiseEvaluationIsWindowByWindowBitForBit(@org.junit.jupiter.api.io.TempDir java.nio.file.Path dir) throws IOException {
        try (LoadedModel m = LoadedModel.open(SharedFiles.model("stories260K.bin"), null, PackedModelLoader.Mode.WEIGHT_ONLY, KernelChoice.AUTO,
                Compute.vector(), LayerLoader.Policy.LAYERWISE)) {
            int[] tokens = Arrays.copyOf(m.tokenizer().encode(Files.readString(SharedFiles.data("tinystories-valid-sample.txt"))), 6 * 128 + 5);
            Perplexity perplexity = new Perplexity(128);
            Perplexity.Result expected = perplexity.evaluate(m.model(), tokens, m.tokenizer().bos(), null);
            for (long bound : new long[] {Long.MAX_VALUE, 0}) {
                List<Integer> released = new ArrayList<>();
                Perplexity.Layerwise by = new Perplexity.Layerwise(stage -> {
                    released.add(stage);
                    m.release(stage);
                }, dir, bound);
                assertThat(perplexity.evaluate(m.model(), tokens, m.tokenizer().bos(), by, null, null)).as("bound %d", bound).isEqualTo(expected);
                int stages = m.model().config().layers() + 2;
                assertThat(released).containsExactlyElementsOf(java.util.stream.IntStream.range(0, stages).boxed().toList());
            }
            Perplexity.Reference reference = perplexity.reference(m.model(), tokens, m.tokenizer().bos(), new Perplexity.Layerwise(m::release, dir, 0), null);
            Perplexity.Comparison layerwise = perplexity.compare(m.model(), reference, new Perplexity.Layerwise(m::release, dir, 0), null, null);
            assertThat(layerwise).isEqualTo(perplexity.compare(m.model(), m.model(), tokens, m.tokenizer().bos(), null));
            assertThat(layerwise.meanKl()).isZero();
        }
        try (var scratch = Files.list(dir)) {
            assertThat(scratch).as("scratch files left behind").isEmpty();
        }
    }

    @Test
    void modelAgainstItselfHasNoDivergenceAndAPerturbedOneHasSome() throws IOException {
        try (Checkpoint c = Checkpoints.open(SharedFiles.model("stories260K.bin"))) {
            Tokenizer tokenizer = tokenizer(c);
            int[] tokens = Arrays.copyOf(tokenizer.encode(Files.readString(SharedFiles.data("tinystories-valid-sample.txt"))), 5 * 64 + 7);
            LlamaModel model = LlamaModel.load(c);
            Perplexity perplexity = new Perplexity(64);

            Perplexity.Comparison same = perplexity.compare(model, model, tokens, tokenizer.bos(), null);
            assertThat(same.model().scored()).isEqualTo(5 * (64 - 32 - 1));
            assertThat(same.meanKl()).isCloseTo(0, offset(1e-12));
            assertThat(same.maxKl()).isCloseTo(0, offset(1e-12));
            assertThat(same.top1Agreement()).isEqualTo(1.0);
            assertThat(same.base()).isEqualTo(same.model());

            // Round every down_proj weight to a coarse grid: a crude quantization the metrics must see.
            Compute compute = Compute.vector();
            LlamaModel coarse = LlamaModel.load(c, compute, (kind, layer, t) -> {
                float[] w = t.toFloats();
                if (kind == TensorKind.W_DOWN) for (int i = 0; i < w.length; i++) w[i] = Math.round(w[i] * 8) / 8f;
                return new DenseF32Weights(w, t.rows(), t.cols(), compute);
            });
            Perplexity.Comparison diff = perplexity.compare(coarse, model, tokens, tokenizer.bos(), null);
            assertThat(diff.meanKl()).isPositive();
            assertThat(diff.klP99()).isGreaterThan(diff.meanKl()).isLessThanOrEqualTo(diff.maxKl());
            assertThat(diff.top1Agreement()).isBetween(0.0, 1.0).isLessThan(1.0);
            assertThat(diff.base().perplexity()).isEqualTo(same.model().perplexity());
            assertThat(diff.model().perplexity()).isNotEqualTo(diff.base().perplexity());
            assertThat(diff.model().perplexity()).isFinite();

            // The base's logits kept once (a Reference) give the same comparison, to the bit, and the same per-token figures.
            List<double[]> live = new ArrayList<>(), kept = new ArrayList<>();
            Perplexity.Comparison again = perplexity.compare(coarse, model, tokens, tokenizer.bos(), null, (i, nll, baseNll, kl) -> live.add(new double[] {nll, baseNll, kl}));
            Perplexity.Reference reference = perplexity.reference(model, tokens, tokenizer.bos(), null);
            Perplexity.Comparison fromReference = perplexity.compare(coarse, reference, null, (i, nll, baseNll, kl) -> kept.add(new double[] {nll, baseNll, kl}));
            assertThat(again).isEqualTo(diff);
            assertThat(fromReference).isEqualTo(diff);
            assertThat(kept).hasSize(diff.model().scored());
            for (int i = 0; i < kept.size(); i++) assertThat(kept.get(i)).isEqualTo(live.get(i));
            assertThat(live.getFirst()[1]).isFinite();
        }
    }

    /**
     * The windows scored in parts (uneven ones, and one part per window) and combined in window order give one pass's
     * figures to the bit, with and without a base, and the same per-token figures; parts that leave a gap or come out of
     * order are refused.
     */
    @Test
    void partsCombinedInWindowOrderAreOnePassBitForBit() throws IOException {
        try (Checkpoint c = Checkpoints.open(SharedFiles.model("stories260K.bin"))) {
            Tokenizer tokenizer = tokenizer(c);
            int[] tokens = Arrays.copyOf(tokenizer.encode(Files.readString(SharedFiles.data("tinystories-valid-sample.txt"))), 7 * 64 + 9);
            LlamaModel model = LlamaModel.load(c);
            Compute compute = Compute.vector();
            LlamaModel coarse = LlamaModel.load(c, compute, (kind, layer, t) -> {
                float[] w = t.toFloats();
                if (kind == TensorKind.W_UP) for (int i = 0; i < w.length; i++) w[i] = Math.round(w[i] * 16) / 16f;
                return new DenseF32Weights(w, t.rows(), t.cols(), compute);
            });
            Perplexity perplexity = new Perplexity(64);
            List<double[]> whole = new ArrayList<>(), combined = new ArrayList<>();
            Perplexity.Comparison expected = perplexity.compare(coarse, model, tokens, tokenizer.bos(), null, (i, n, b, k) -> whole.add(new double[] {i, n, b, k}));
            Perplexity.Result expectedAlone = perplexity.evaluate(coarse, tokens, tokenizer.bos(), (Perplexity.Progress) null, null);
            for (int parts : new int[] {2, 3, 7}) {
                List<Perplexity.WindowScores> scores = new ArrayList<>(), alone = new ArrayList<>();
                for (int p = 0; p < parts; p++) {
                    Perplexity.Windows windows = Perplexity.Windows.part(p, parts, 7);
                    scores.add(perplexity.comparePart(coarse, model, tokens, tokenizer.bos(), windows, null));
                    alone.add(perplexity.evaluatePart(coarse, tokens, tokenizer.bos(), windows, null));
                }
                combined.clear();
                assertThat(Perplexity.combineComparison(scores, (i, n, b, k) -> combined.add(new double[] {i, n, b, k}))).as("%d parts", parts).isEqualTo(expected);
                assertThat(Perplexity.combine(alone, null)).as("%d parts, no base", parts).isEqualTo(expectedAlone);
                assertThat(combined).hasSameSizeAs(whole);
                for (int i = 0; i < whole.size(); i++) assertThat(combined.get(i)).isEqualTo(whole.get(i));
                if (parts == 3) {
                    assertThatThrownBy(() -> Perplexity.combine(List.of(scores.get(0), scores.get(2)), null)).hasMessageContaining("do not cover one text's windows in order");
                    assertThatThrownBy(() -> Perplexity.combine(scores.subList(0, 2), null)).hasMessageContaining("the parts end at window");
                    assertThatThrownBy(() -> Perplexity.combineComparison(alone, null)).hasMessageContaining("without a base model");
                }
            }
            assertThat(expected.meanKl()).isPositive();
        }
    }

    @Test
    void percentileInterpolatesBetweenRanksLikeLlamaCpp() {
        float[] sorted = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
        assertThat(Perplexity.percentile(sorted, 0.99)).isCloseTo(9.9, offset(1e-9));
        assertThat(Perplexity.percentile(sorted, 0.5)).isEqualTo(5.0);
        assertThat(Perplexity.percentile(new float[] {3}, 0.99)).isEqualTo(3.0);
    }

    @Test
    void unusableInputsAreRejected() throws IOException {
        try (Checkpoint c = Checkpoints.open(SharedFiles.model("stories260K.bin"))) {
            LlamaModel model = LlamaModel.load(c);
            Tokenizer tokenizer = tokenizer(c);
            assertThatThrownBy(() -> new Perplexity(256).evaluate(model, tokenizer, "", null))
                    .hasMessage("the text to evaluate is empty");
            assertThatThrownBy(() -> new Perplexity(1024).evaluate(model, tokenizer, "Once upon a time", null))
                    .hasMessage("context 1024 exceeds the model's maximum of 512 positions");
            assertThatThrownBy(() -> new Perplexity(256).evaluate(model, tokenizer, "Once upon a time", null))
                    .hasMessage("the text is 5 tokens; a context of 256 needs at least 512 (two windows, llama-perplexity's minimum)");
            assertThatThrownBy(() -> new Perplexity(2)).hasMessageContaining("at least 4");
        }
    }

    @Test
    void nonFiniteLogitsAreAnErrorNotANaN() throws IOException {
        try (Checkpoint c = Checkpoints.open(SharedFiles.model("stories260K.bin"))) {
            Compute compute = Compute.vector();
            LlamaModel broken = LlamaModel.load(c, compute, (kind, layer, t) -> {
                float[] w = t.toFloats();
                if (kind == TensorKind.HEAD) w[7] = Float.NaN;
                return new DenseF32Weights(w, t.rows(), t.cols(), compute);
            });
            int[] tokens = new int[64];
            Arrays.fill(tokens, 300);
            assertThatThrownBy(() -> new Perplexity(16).evaluate(broken, tokens, 1, null))
                    .isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("the model produced logit NaN for token 0 at text position 8");
        }
    }
}
