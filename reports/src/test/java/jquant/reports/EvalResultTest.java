package jquant.reports;

import jquant.runtime.Perplexity;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;

import static org.assertj.core.api.Assertions.assertThat;

class EvalResultTest {

    /** The field names, order and number formats {@code jquant eval --json} has always written, so older files and tools still read it. */
    @Test
    void writesTheEvalJsonLayoutAndReadsItBack(@TempDir Path dir) throws Exception {
        EvalResult compared = new EvalResult("m.jqw", "t.txt", 128, "npu", 400_000, new Perplexity.Result(4.5, 0.03, 1.5, 1000, 7, 441),
                "m.bin", new Perplexity.Result(4.12, 0.02, 1.4, 1000, 7, 441), new EvalResult.Divergence(0.01, 0.05, 0.25, 0.97), 2.5);
        Path file = dir.resolve("eval.json");
        compared.write(file);
        assertThat(Files.readString(file)).isEqualTo("""
                {
                  "model" : "m.jqw",
                  "data" : "t.txt",
                  "ctx" : 128,
                  "mode" : "npu",
                  "fileBytes" : 400000,
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
                  "seconds" : 2.5
                }""");
        assertThat(EvalResult.read(file)).isEqualTo(compared);

        EvalResult alone = new EvalResult("m.bin", "t.txt", 256, "", 1000, new Perplexity.Result(4.12, 0.02, 1.4, 1000, 3, 381), null, null, null, 1.0);
        alone.write(file);
        assertThat(Files.readString(file)).doesNotContain("\"mode\"", "\"base", "\"divergence\"").contains("\"fileBytes\" : 1000,\n  \"result\" : {");
        assertThat(EvalResult.read(file)).isEqualTo(alone);
    }
}
