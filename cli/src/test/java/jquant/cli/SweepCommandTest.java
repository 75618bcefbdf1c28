package jquant.cli;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import jquant.formats.jqw.JqwFile;
import jquant.pipeline.QuantizationMethod;
import jquant.reports.EvalResult;
import jquant.core.WorkerPool;
import jquant.testsupport.SharedFiles;
import jquant.testsupport.Stories260K;
import jquant.testsupport.Slow;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.FileTime;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

@Slow
class SweepCommandTest {

    /**
     * A small sweep on stories260K: every cell packed, verified and evaluated in both modes, the report
     * written; run again, every cell is found done and nothing is recomputed; a done cell whose packed
     * file was changed is made again; a folder of another sweep is refused, naming what differs.
     */
    @Test
    void sweepsEveryCellReportsAndResumes(@TempDir Path dir) throws Exception {
        String sample = Files.readString(SharedFiles.data("tinystories-valid-sample.txt"));
        Path calibration = Files.writeString(dir.resolve("calib.txt"), sample.substring(0, 6000));
        Path eval = Files.writeString(dir.resolve("eval.txt"), sample.substring(6000, 12000));
        Path out = dir.resolve("sweep");
        String[] args = {"sweep", SharedFiles.model("stories260K.bin").toString(), "--data", eval.toString(), "--calibration-data", calibration.toString(),
                "--tokens", "1024", "--ctx", "64", "--budgets", "4,6", "--methods", "uniform,edgeflow,ours", "--out", out.toString()};
        CliTest.Result first = CliTest.run(args);
        assertThat(first.code()).as(first.err()).isZero();
        assertThat(first.out()).contains("[1/12] uniform B=4 weight-only", "[12/12] ours B=6 npu", "## Paired comparisons", "Wrote");
        assertThat(out.resolve("ours-4/verified")).exists();
        EvalResult ours = EvalResult.read(out.resolve("ours-4/eval-npu.json"));
        assertThat(ours.series()).isEqualTo("ours");
        assertThat(ours.quantization().rounding()).isEqualTo("gptq");
        assertThat(ours.perToken().nll()).hasSize(ours.scored());
        assertThat(ours.threads()).isEqualTo(Runtime.getRuntime().availableProcessors());
        JsonNode report = new ObjectMapper().readTree(out.resolve("report/report.json").toFile());
        assertThat(report.at("/evaluations").size()).isEqualTo(12);
        assertThat(report.at("/series").size()).isEqualTo(6);
        assertThat(report.at("/pairedComparisons").size()).isEqualTo(4 * 3);
        assertThat(Files.readString(out.resolve("report/report.html"))).contains("Pareto");

        FileTime packed = Files.getLastModifiedTime(out.resolve("edgeflow-6/model.jqw"));
        CliTest.Result again = CliTest.run(args);
        assertThat(again.code()).as(again.err()).isZero();
        assertThat(again.out()).contains("[12/12] ours B=6 npu").contains("(done before)").doesNotContain("(eval ");
        assertThat(Files.getLastModifiedTime(out.resolve("edgeflow-6/model.jqw"))).isEqualTo(packed);

        // One bit flipped in a done cell's packed file: the resume finds it by its checksums and makes that cell again.
        Path damaged = out.resolve("edgeflow-6/model.jqw");
        byte[] bytes = Files.readAllBytes(damaged);
        bytes[bytes.length / 2] ^= 0x10;
        Files.write(damaged, bytes);
        assertThatThrownBy(() -> JqwFile.open(damaged).close()).hasMessageContaining("checksum mismatch");
        CliTest.Result redone = CliTest.run(args);
        assertThat(redone.code()).as(redone.err()).isZero();
        assertThat(redone.out()).contains(damaged + " is made again: ").contains("checksum mismatch")
                .containsPattern("edgeflow B=6 weight-only .*\\(eval ").containsPattern("edgeflow B=6 npu .*\\(eval ")
                .containsPattern("edgeflow B=4 npu .*\\(done before\\)");
        JqwFile.open(damaged).close();
        assertThat(out.resolve("edgeflow-6/verified")).exists();

        args[args.length - 7] = "128";  // --ctx 128: another sweep
        CliTest.Result other = CliTest.run(args);
        assertThat(other.code()).isEqualTo(1);
        assertThat(other.err()).contains("holds another sweep (its sweep.json differs in ctx (64 there, 128 here))");

        // A folder made before the methods' recipes were recorded (or by an older recipe): refused, naming the method.
        args[args.length - 7] = "64";
        Path manifest = out.resolve("sweep.json");
        ObjectNode older = (ObjectNode) new ObjectMapper().readTree(manifest.toFile());
        for (QuantizationMethod m : QuantizationMethod.values()) older.remove("method." + m.label());
        Files.write(manifest, new ObjectMapper().writeValueAsBytes(older));
        CliTest.Result stale = CliTest.run(args);
        assertThat(stale.code()).isEqualTo(1);
        assertThat(stale.err()).contains("holds another sweep (its sweep.json differs in ", "method.ours (absent there, " + QuantizationMethod.OURS.recipe() + " here)");
    }

    /**
     * {@code --compare} of llama.cpp's own quantizations of stories260K (its Q8_0 and Q4_0 GGUFs, made by llama-quantize):
     * each is a series of the report at its file size, with the figures {@code jquant eval FILE --base MODEL} gives on the
     * same text and ctx, digit for digit. Run again, its evaluation is kept; with a compare file added, only that one is
     * evaluated; with a compare file's bytes changed, it is evaluated again, saying so.
     */
    @Test
    void comparesOtherToolsFilesOnTheSameTokens(@TempDir Path dir) throws Exception {
        String sample = Files.readString(SharedFiles.data("tinystories-valid-sample.txt"));
        Path calibration = Files.writeString(dir.resolve("calib.txt"), sample.substring(0, 6000));
        Path eval = Files.writeString(dir.resolve("eval.txt"), sample.substring(6000, 12000));
        Path model = Stories260K.model(), out = dir.resolve("sweep");
        Path q8 = Files.copy(SharedFiles.model("stories260K-Q8_0.gguf"), dir.resolve("stories260K-Q8_0.gguf"));
        Path q4 = SharedFiles.model("stories260K-Q4_0.gguf");
        List<String> sweep = List.of("sweep", model.toString(), "--data", eval.toString(), "--calibration-data", calibration.toString(), "--tokens", "1024",
                "--ctx", "64", "--budgets", "4", "--methods", "edgeflow", "--modes", "weight-only", "--out", out.toString());

        CliTest.Result first = CliTest.run(with(sweep, "--compare", q8.toString()));
        assertThat(first.code()).as(first.err()).isZero();
        assertThat(first.out()).contains("[1/2] edgeflow B=4 weight-only", "[2/2] stories260K-Q8_0 ");
        JsonNode q8Row = row(out, "stories260K-Q8_0");
        assertThat(q8Row.get("mode").asText()).isEqualTo("checkpoint");
        assertThat(q8Row.get("fileBytes").asLong()).isEqualTo(Files.size(q8));
        assertSameFigures(q8Row, jquantEval(q8, model, eval, dir));
        assertThat(Files.readString(out.resolve("report/report.html"))).contains("Pareto", "stories260K-Q8_0");
        assertThat(Files.readString(out.resolve("report/report.md"))).contains("| stories260K-Q8_0 | ");

        CliTest.Result added = CliTest.run(with(sweep, "--compare", q8 + "," + q4));
        assertThat(added.code()).as(added.err()).isZero();
        assertThat(added.out()).containsPattern("stories260K-Q8_0 .*\\(done before\\)").containsPattern("stories260K-Q4_0 .*\\(eval ");
        assertSameFigures(row(out, "stories260K-Q4_0"), jquantEval(q4, model, eval, dir));
        assertSameFigures(row(out, "stories260K-Q8_0"), jquantEval(q8, model, eval, dir));

        Files.copy(q4, q8, StandardCopyOption.REPLACE_EXISTING);  // another file under the same name
        CliTest.Result changed = CliTest.run(with(sweep, "--compare", q8.toString(), "--compare", q4.toString()));
        assertThat(changed.code()).as(changed.err()).isZero();
        assertThat(changed.out()).contains(out.resolve("compare/stories260K-Q8_0/eval.json") + " is made again: " + q8 + " is not the file it was evaluated from")
                .containsPattern("stories260K-Q8_0 .*\\(eval ").containsPattern("stories260K-Q4_0 .*\\(done before\\)");
        assertSameFigures(row(out, "stories260K-Q8_0"), jquantEval(q4, model, eval, dir));
    }

    /** A compare file that is missing, or of another model, is one line naming it before any work: no folder is made. */
    @Test
    void refusesACompareFileThatIsMissingOrOfAnotherModel(@TempDir Path dir) throws Exception {
        Path text = Files.writeString(dir.resolve("eval.txt"), Files.readString(SharedFiles.data("tinystories-valid-sample.txt")).substring(0, 6000));
        Path out = dir.resolve("sweep"), missing = dir.resolve("missing.gguf"), other = SharedFiles.model("tinystories-6M/tinystories-6M-Q8_0.gguf");
        List<String> sweep = List.of("sweep", Stories260K.model().toString(), "--data", text.toString(), "--out", out.toString());

        CliTest.Result gone = CliTest.run(with(sweep, "--compare", missing.toString()));
        assertThat(gone.code()).isEqualTo(1);
        assertThat(gone.err().strip()).isEqualTo("jquant: " + missing + ": no such file or folder");

        CliTest.Result wrong = CliTest.run(with(sweep, "--compare", other.toString()));
        assertThat(wrong.code()).isEqualTo(1);
        assertThat(wrong.err().strip()).doesNotContain("\n").startsWith("jquant: " + other + ": is not a file of " + Stories260K.model() + ": its shape (")
                .contains("dim 256", "dim 64");

        CliTest.Result twice = CliTest.run(with(sweep, "--compare", other + "," + other));
        assertThat(twice.code()).isEqualTo(2);
        assertThat(twice.err().strip()).contains("would be series 'tinystories-6M-Q8_0', which is --compare " + other + "'s");
        assertThat(out).doesNotExist();
    }

    private static String[] with(List<String> args, String... more) {
        List<String> all = new ArrayList<>(args);
        all.addAll(List.of(more));
        return all.toArray(String[]::new);
    }

    /** The report's row of {@code series}. */
    private static JsonNode row(Path sweep, String series) throws Exception {
        for (JsonNode e : new ObjectMapper().readTree(sweep.resolve("report/report.json").toFile()).at("/evaluations")) {
            if (e.get("series").asText().equals(series)) return e;
        }
        throw new AssertionError("no series " + series + " in " + sweep.resolve("report/report.json"));
    }

    /** What {@code jquant eval FILE --base MODEL --data TEXT --ctx 64 --out JSON} gives. */
    private static EvalResult jquantEval(Path file, Path model, Path text, Path dir) {
        Path json = dir.resolve("eval-" + UUID.randomUUID() + ".json");
        CliTest.Result r = CliTest.run("eval", file.toString(), "--base", model.toString(), "--data", text.toString(), "--ctx", "64", "--out", json.toString());
        assertThat(r.code()).as(r.err()).isZero();
        try {
            return EvalResult.read(json);
        } catch (java.io.IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }

    private static void assertSameFigures(JsonNode row, EvalResult eval) {
        assertThat(row.get("perplexity").asDouble()).isEqualTo(eval.perplexity());
        assertThat(row.get("stderr").asDouble()).isEqualTo(eval.stderr());
        assertThat(row.get("meanKl").asDouble()).isEqualTo(eval.meanKl());
        assertThat(row.get("klP99").asDouble()).isEqualTo(eval.klP99());
        assertThat(row.get("top1Agreement").asDouble()).isEqualTo(eval.top1());
        assertThat(row.get("scored").asInt()).isEqualTo(eval.scored());
        assertThat(row.get("fileBytes").asLong()).isEqualTo(eval.fileBytes());
    }
}
