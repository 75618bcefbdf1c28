package jquant.cli;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import jquant.calibration.CalibrationStats;
import jquant.calibration.CalibrationStatsFile;
import jquant.quantize.BitPlan;
import jquant.quantize.BitPlanJson;
import jquant.quantize.TensorPlan;
import jquant.testsupport.SharedFiles;
import jquant.testsupport.Slow;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

import static jquant.cli.CliTest.run;
import static org.assertj.core.api.Assertions.assertThat;

@Slow
class CalibrateAllocateCliTest {
    @TempDir
    static Path dir;
    static Path stats;

    static Path text() {
        return SharedFiles.data("tinystories-valid-sample.txt");
    }

    @BeforeAll
    static void calibrate() {
        stats = dir.resolve("stats.gguf");
        CliTest.Result r = run("calibrate", SharedFiles.model("stories260K.bin").toString(), "--data", text().toString(), "--tokens", "1024",
                "--out", stats.toString());
        assertThat(r.code()).as(r.err()).isZero();
        assertThat(r.out()).contains("blk.4.ffn_down", "B=3:  α   left  clip", "B=8:  α   left  clip", "Wrote");
    }

    @Test
    void inspectShowsTheStatsFile() throws IOException {
        CliTest.Result text = run("inspect", stats.toString());
        assertThat(text.code()).as(text.err()).isZero();
        assertThat(text.out()).contains("calibration stats", "stories260K.bin", "blk.0.attn_qkv", "blk.0.attn_q.weight", ", 1,024 tokens,");
        CliTest.assertAligned(text.out(), "output (S_O)");
        CliTest.Result json = run("inspect", "--json", stats.toString());
        JsonNode root = new ObjectMapper().readTree(json.out());
        assertThat(root.at("/tokens").asInt()).isEqualTo(1024);
        assertThat(root.at("/groups").size()).isEqualTo(5 * 4 + 1);
        assertThat(root.at("/outputs").size()).isEqualTo(5 * 7 + 1);
    }

    @Test
    void allocateHitsTheBudgetPerTensorDeterministically() throws IOException {
        Path a = dir.resolve("a.json"), b = dir.resolve("b.json");
        CliTest.Result r = run("allocate", SharedFiles.model("stories260K.bin").toString(), "--budget", "5", "--stats", stats.toString(), "--scope", "tensor",
                "--out", a.toString());
        assertThat(r.code()).as(r.err()).isZero();
        assertThat(r.out()).contains("attn_q", "ffn_down", "output").doesNotContain("Note:");
        assertThat(run("allocate", SharedFiles.model("stories260K.bin").toString(), "--budget", "5", "--stats", stats.toString(), "--scope", "tensor",
                "--out", b.toString()).code()).isZero();
        assertThat(Files.mismatch(a, b)).isEqualTo(-1L);
        BitPlan plan = BitPlanJson.read(a);
        assertThat(plan.tensors()).hasSize(5 * 7 + 1);
        for (TensorPlan t : plan.tensors()) {
            assertThat(t.averageBits()).as(t.name()).isEqualTo(5.0);
            assertThat(t.alpha()).as(t.name()).isNotNull();
        }
    }

    @Test
    void modelScopeWeightedExactRuns() throws IOException {
        Path out = dir.resolve("model.json");
        // 4.5 bits was not among the budgets calibrate searched α for: refused, unless α is fixed.
        CliTest.Result notSearched = run("allocate", SharedFiles.model("stories260K.bin").toString(), "--budget", "4.5", "--stats", stats.toString(),
                "--out", out.toString());
        assertThat(notSearched.code()).isEqualTo(1);
        assertThat(notSearched.err()).contains("searched α for budgets 3, 4, 5, 6, 8, not for 4.5");
        CliTest.Result r = run("allocate", SharedFiles.model("stories260K.bin").toString(), "--budget", "4.5", "--stats", stats.toString(),
                "--alpha", "0.5", "--scope", "model", "--metric", "exact", "--weighted", "--output-weighted", "--out", out.toString());
        assertThat(r.code()).as(r.err()).isZero();
        BitPlan plan = BitPlanJson.read(out);
        assertThat(plan.averageBits()).isLessThanOrEqualTo(4.5).isGreaterThan(4.49);
        assertThat(plan.tensors().stream().mapToDouble(TensorPlan::averageBits).distinct().count()).isGreaterThan(1);
        assertThat(plan.tensors()).allSatisfy(t -> assertThat(t.alpha()).isEqualTo(0.5));
    }

    @Test
    void lossSensitivityMovesBitsBetweenTensorsAndBadRequestsAreRefused() throws IOException {
        String model = SharedFiles.model("stories260K.bin").toString();
        Path plain = dir.resolve("ours.json"), sensitive = dir.resolve("sensitive.json");
        assertThat(run("allocate", model, "--budget", "5", "--stats", stats.toString(), "--scope", "model", "--output-weighted",
                "--out", plain.toString()).code()).isZero();
        CliTest.Result r = run("allocate", model, "--budget", "5", "--stats", stats.toString(), "--scope", "model", "--output-weighted",
                "--sensitivity", text().toString(), "--out", sensitive.toString());
        assertThat(r.code()).as(r.err()).isZero();
        assertThat(r.out()).contains("loss sensitivity from 128 tokens of tinystories-valid-sample.txt");
        BitPlan withLoss = BitPlanJson.read(sensitive), without = BitPlanJson.read(plain);
        assertThat(withLoss.averageBits()).isLessThanOrEqualTo(5).isGreaterThan(4.99);
        assertThat(withLoss.tensors().stream().filter(t -> !java.util.Arrays.equals(t.bits(), without.tensor(t.name()).bits())).count()).isGreaterThan(10);

        Path out = dir.resolve("refused.json");
        CliTest.Result tensorScope = run("allocate", model, "--budget", "5", "--stats", stats.toString(), "--scope", "tensor", "--sensitivity", text().toString(),
                "--out", out.toString());
        assertThat(tensorScope.code()).isEqualTo(2);
        assertThat(tensorScope.err()).contains("--sensitivity", "--scope model");
        CliTest.Result tooFew = run("allocate", model, "--budget", "5", "--stats", stats.toString(), "--scope", "model", "--sensitivity", text().toString(),
                "--sensitivity-tokens", "1", "--out", out.toString());
        assertThat(tooFew.code()).isEqualTo(2);
        assertThat(tooFew.err()).contains("--sensitivity-tokens must be at least 2");
        Path blank = Files.writeString(dir.resolve("blank.txt"), "  \n");
        CliTest.Result empty = run("allocate", model, "--budget", "5", "--stats", stats.toString(), "--scope", "model", "--sensitivity", blank.toString(),
                "--out", out.toString());
        assertThat(empty.code()).isEqualTo(1);
        assertThat(empty.err()).startsWith("jquant: ").contains("blank.txt", "empty").doesNotContain("\tat ").hasLineCount(1);
        CliTest.Result missing = run("allocate", model, "--budget", "5", "--scope", "model", "--sensitivity", dir.resolve("nope.txt").toString(),
                "--out", out.toString());
        assertThat(missing.code()).isEqualTo(1);
        assertThat(missing.err()).contains("nope.txt").hasLineCount(1);
        assertThat(out).doesNotExist();
    }

    /**
     * With stats that carry calibration's sample, no flags give the best plan: the same bytes as naming it with the
     * calibration text. Stats without the sample (older files) give the paper's plan, as before, and say how to get the better one.
     */
    @Test
    void theDefaultIsTheBestPlanWithTheStatsSample() throws IOException {
        String model = SharedFiles.model("stories260K.bin").toString();
        Path byDefault = dir.resolve("default.json"), named = dir.resolve("named.json");
        CliTest.Result r = run("allocate", model, "--budget", "5", "--stats", stats.toString(), "--out", byDefault.toString());
        assertThat(r.code()).as(r.err()).isZero();
        assertThat(r.out()).contains("model scope", "output-weighted", "loss sensitivity from 128 tokens of the stats' sample").doesNotContain("Note:");
        // stories260K, 5 layers of 7 block matrices: 7 · 6 / 2 = 21 passes of the 128 tokens, said before the work
        assertThat(r.out()).contains("Loss probe: 35 block matrices, each rounded alone and the model rerun from its layer on 128 tokens: about 21 forward passes, as much work as eval on 2,688 tokens");
        assertThat(run("allocate", model, "--budget", "5", "--stats", stats.toString(), "--scope", "model", "--output-weighted",
                "--sensitivity", text().toString(), "--out", named.toString()).code()).isZero();
        assertThat(Files.mismatch(byDefault, named)).isEqualTo(-1L);
        // --sensitivity alone keeps the default plan and probes its text instead of the sample
        Path textProbe = dir.resolve("text-probe.json");
        assertThat(run("allocate", model, "--budget", "5", "--stats", stats.toString(), "--sensitivity", text().toString(),
                "--out", textProbe.toString()).code()).isZero();
        assertThat(Files.mismatch(textProbe, named)).isEqualTo(-1L);

        Path older = dir.resolve("older-stats.gguf");
        CalibrationStats withSample = CalibrationStatsFile.read(stats);
        CalibrationStatsFile.write(new CalibrationStats(withSample.fingerprint(), withSample.model(), withSample.tokens(), withSample.sampleTokens(),
                withSample.budgets(), withSample.groups(), withSample.outputMax(), null, withSample.source()), older);
        Path olderDefault = dir.resolve("older-default.json"), paper = dir.resolve("paper.json");
        CliTest.Result weaker = run("allocate", model, "--budget", "5", "--stats", older.toString(), "--out", olderDefault.toString());
        assertThat(weaker.code()).as(weaker.err()).isZero();
        assertThat(weaker.out()).contains("Note: older-stats.gguf has no sample for the loss probe", "calibrate again", "tensor scope");
        assertThat(weaker.out().lines().filter(l -> l.startsWith("Note:")).count()).isEqualTo(1);
        assertThat(run("allocate", model, "--budget", "5", "--stats", stats.toString(), "--scope", "tensor", "--out", paper.toString()).code()).isZero();
        assertThat(Files.mismatch(olderDefault, paper)).isEqualTo(-1L);
        CliTest.Result raw = run("allocate", model, "--budget", "5", "--out", dir.resolve("raw.json").toString());
        assertThat(raw.code()).as(raw.err()).isZero();
        assertThat(raw.out()).contains("Note: without --stats this is the paper's per-tensor plan");

        Path out = dir.resolve("refused-default.json");
        CliTest.Result tooMany = run("allocate", model, "--budget", "5", "--stats", stats.toString(), "--sensitivity-tokens", "513", "--out", out.toString());
        assertThat(tooMany.code()).isEqualTo(2);
        assertThat(tooMany.err()).contains("--sensitivity-tokens 513", "512", stats.toString()).hasLineCount(1);
        CliTest.Result noSample = run("allocate", model, "--budget", "5", "--stats", older.toString(), "--sensitivity-tokens", "64", "--out", out.toString());
        assertThat(noSample.code()).isEqualTo(2);
        assertThat(noSample.err()).contains("--sensitivity-tokens", "older-stats.gguf has no sample").hasLineCount(1);
        CliTest.Result noStats = run("allocate", model, "--budget", "5", "--sensitivity", text().toString(), "--out", out.toString());
        assertThat(noStats.code()).isEqualTo(2);
        assertThat(noStats.err()).contains("--sensitivity", "needs --stats").hasLineCount(1);
        assertThat(out).doesNotExist();
    }

    @Test
    void baselinesUniformWidthsAndSmoothQuant() throws IOException {
        Path out = dir.resolve("sq.json");
        CliTest.Result r = run("allocate", SharedFiles.model("stories260K.bin").toString(), "--budget", "4", "--stats", stats.toString(),
                "--uniform", "--smoothing", "smoothquant", "--alpha", "0.5", "--out", out.toString());
        assertThat(r.code()).as(r.err()).isZero();
        assertThat(r.out()).contains("uniform widths", "smoothquant α 0.5");
        BitPlan plan = BitPlanJson.read(out);
        assertThat(plan.smoothing()).isEqualTo(jquant.quantize.SmoothingRule.SMOOTHQUANT);
        assertThat(plan.tensors()).allSatisfy(t -> assertThat(t.histogram()[3]).isEqualTo(t.rows()));
        String model = SharedFiles.model("stories260K.bin").toString();
        assertThat(run("allocate", model, "--budget", "4.5", "--uniform", "--out", out.toString()).err()).contains("whole number of bits");
        CliTest.Result noAlpha = run("allocate", model, "--budget", "4", "--stats", stats.toString(), "--smoothing", "smoothquant", "--out", out.toString());
        assertThat(noAlpha.code()).isEqualTo(2);
        assertThat(noAlpha.err()).contains("needs a fixed --alpha");
    }

    @Test
    void badInputIsAClearErrorAndWritesNothing() {
        Path plan = dir.resolve("bad.json");
        String model = SharedFiles.model("stories260K.bin").toString();
        for (String budget : new String[]{"0", "9"}) {
            CliTest.Result r = run("allocate", model, "--budget", budget, "--out", plan.toString());
            assertThat(r.code()).isEqualTo(2);
            assertThat(r.err()).contains("--budget", "outside [1, 8]");
        }
        CliTest.Result missing = run("allocate", model, "--budget", "5", "--stats", dir.resolve("nope.gguf").toString(), "--out", plan.toString());
        assertThat(missing.code()).isEqualTo(1);
        assertThat(missing.err()).startsWith("jquant: ").contains("nope.gguf").doesNotContain("\tat ");
        CliTest.Result other = run("allocate", SharedFiles.model("stories260K-Q8_0.gguf").toString(), "--budget", "5", "--stats", stats.toString(),
                "--out", plan.toString());
        assertThat(other.code()).isEqualTo(1);
        assertThat(other.err()).contains("another model");
        CliTest.Result notStats = run("allocate", model, "--budget", "5", "--stats", model, "--out", plan.toString());
        assertThat(notStats.code()).isEqualTo(1);
        assertThat(notStats.err()).contains("not a calibration stats file");
        assertThat(run("allocate", model, "--budget", "5", "--weighted", "--out", plan.toString()).code()).isEqualTo(2);
        assertThat(plan).doesNotExist();

        Path out = dir.resolve("bad-stats.gguf");
        CliTest.Result noText = run("calibrate", model, "--data", dir.resolve("missing.txt").toString(), "--out", out.toString());
        assertThat(noText.code()).isEqualTo(1);
        assertThat(noText.err()).contains("missing.txt");
        CliTest.Result tooFew = run("calibrate", model, "--data", text().toString(), "--tokens", "1", "--out", out.toString());
        assertThat(tooFew.code()).isEqualTo(2);
        assertThat(tooFew.err()).contains("at least 2 tokens");
        assertThat(out).doesNotExist();
    }

    /** A name the filesystem takes, jquant takes: 240 bytes, 282 with the temporary file's {@code .<uuid>.tmp} (it was "file name too long"). */
    @Test
    void anOutputNameUpTo255BytesIsWritten() throws IOException {
        Path out = dir.resolve("out/" + "m".repeat(235) + ".json");
        CliTest.Result r = run("allocate", SharedFiles.model("stories260K.bin").toString(), "--budget", "4", "--quiet", "--out", out.toString());
        assertThat(r.code()).as(r.err()).isZero();
        assertThat(BitPlanJson.read(out).budget()).isEqualTo(4.0);
        try (var files = Files.list(out.getParent())) {
            assertThat(files).containsExactly(out);
        }
    }

    /** A memory bound the run cannot fit is refused before any work, in one line naming the need and how to give the JVM more. */
    @Test
    void aRunThatCannotFitItsMemoryIsRefusedUpFront() {
        Path out = dir.resolve("small.gguf");
        String model = SharedFiles.model("stories260K.bin").toString();
        CliTest.Result small = run("calibrate", model, "--data", text().toString(), "--second-moments", "--memory", "64k", "--out", out.toString());
        assertThat(small.code()).isEqualTo(1);
        assertThat(small.err()).startsWith("jquant: ").contains("needs about", "more than the 66 kB it may use", "JQUANT_JAVA_OPTS=-Xmx")
                .doesNotContain("\tat ").hasLineCount(1);
        assertThat(out).doesNotExist();
        assertThat(run("calibrate", model, "--data", text().toString(), "--memory", "lots", "--out", out.toString()).err()).contains("--memory", "not a size");
        assertThat(run("calibrate", model, "--data", text().toString(), "--memory", "100000G", "--out", out.toString()).err())
                .contains("more than the JVM's heap");
    }
}
