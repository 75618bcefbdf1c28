package jquant.reports;

import jquant.runtime.Perplexity;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;

import static org.assertj.core.api.Assertions.assertThat;

class EvalResultTest {

    /**
     * The field names, order and number formats {@code jquant eval --json} writes: those it has always
     * written, in their old order, with the text's hash, series, weights, quantization, thread count and
     * per-token figures added where they belong.
     */
    @Test
    void writesTheEvalJsonLayoutAndReadsItBack(@TempDir Path dir) throws Exception {
        EvalResult.TokenFigures perToken = new EvalResult.TokenFigures(new float[] {1.5f, 0.25f}, new float[] {1.25f, 0.5f}, new float[] {0.01f, 0f});
        EvalResult compared = new EvalResult("m.jqw", "t.txt", "ab12", 128, "npu", "edgeflow", 400_000, 1_000_000,
                new EvalResult.Quantization(5, 4.99, "gptq", "edgeflow"), new Perplexity.Result(4.5, 0.03, 1.5, 1000, 7, 441),
                "m.bin", new Perplexity.Result(4.12, 0.02, 1.4, 1000, 7, 441), new EvalResult.Divergence(0.01, 0.05, 0.25, 0.97), 2.5, 4, perToken);
        Path file = dir.resolve("eval.json");
        compared.write(file);
        assertThat(Files.readString(file)).isEqualTo("""
                {
                  "model" : "m.jqw",
                  "data" : "t.txt",
                  "dataSha256" : "ab12",
                  "ctx" : 128,
                  "mode" : "npu",
                  "series" : "edgeflow",
                  "fileBytes" : 400000,
                  "parameters" : 1000000,
                  "quantization" : {
                    "budget" : 5.0,
                    "averageBits" : 4.99,
                    "rounding" : "gptq",
                    "smoothing" : "edgeflow"
                  },
                  "base" : "m.bin",
                  "result" : {
                    "perplexity" : 4.5,
                    "stderr" : 0.03,
                    "meanNll" : 1.5,
                    "tokens" : 1000,
                    "windows" : 7,
                    "scored" : 441
                  },
                  "baseResult" : {
                    "perplexity" : 4.12,
                    "stderr" : 0.02,
                    "meanNll" : 1.4,
                    "tokens" : 1000,
                    "windows" : 7,
                    "scored" : 441
                  },
                  "divergence" : {
                    "meanKl" : 0.01,
                    "klP99" : 0.05,
                    "maxKl" : 0.25,
                    "top1Agreement" : 0.97
                  },
                  "seconds" : 2.5,
                  "threads" : 4,
                  "perToken" : {
                    "encoding" : "float32-le-base64",
                    "nll" : "AADAPwAAgD4=",
                    "baseNll" : "AACgPwAAAD8=",
                    "kl" : "CtcjPAAAAAA="
                  }
                }""");
        assertThat(EvalResult.read(file)).isEqualTo(compared);
        assertThat(compared.bitsPerWeight()).isEqualTo(3.2);

        EvalResult alone = new EvalResult("m.bin", "t.txt", "", 256, "", "", 1000, -1, null, new Perplexity.Result(4.12, 0.02, 1.4, 1000, 3, 381),
                null, null, null, 1.0, -1, null);
        alone.write(file);
        assertThat(Files.readString(file)).doesNotContain("\"mode\"", "\"base", "\"divergence\"", "\"series\"", "\"perToken\"", "dataSha256", "threads")
                .contains("\"fileBytes\" : 1000,\n  \"result\" : {");
        assertThat(EvalResult.read(file)).isEqualTo(alone);
    }

    /** A file written before the text hash, series, weights, quantization, thread count and per-token figures existed still reads. */
    @Test
    void readsOlderEvalJson(@TempDir Path dir) throws Exception {
        Path file = Files.writeString(dir.resolve("old.json"), """
                { "model" : "m.jqw", "data" : "t.txt", "ctx" : 128, "mode" : "npu", "fileBytes" : 400000, "base" : "m.bin",
                  "result" : { "perplexity" : 4.5, "stderr" : 0.03, "meanNll" : 1.5, "tokens" : 1000, "windows" : 7, "scored" : 441 },
                  "baseResult" : { "perplexity" : 4.12, "stderr" : 0.02, "meanNll" : 1.4, "tokens" : 1000, "windows" : 7, "scored" : 441 },
                  "divergence" : { "meanKl" : 0.01, "klP99" : 0.05, "maxKl" : 0.25, "top1Agreement" : 0.97 }, "seconds" : 2.5 }""");
        EvalResult r = EvalResult.read(file);
        assertThat(r.meanKl()).isEqualTo(0.01);
        assertThat(r.dataSha256()).isEmpty();
        assertThat(r.series()).isEmpty();
        assertThat(r.perToken()).isNull();
        assertThat(r.quantization()).isNull();
        assertThat(r.bitsPerWeight()).isNaN();
        assertThat(r.threads()).isEqualTo(-1);
    }
}
