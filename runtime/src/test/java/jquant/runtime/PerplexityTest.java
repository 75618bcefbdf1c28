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
