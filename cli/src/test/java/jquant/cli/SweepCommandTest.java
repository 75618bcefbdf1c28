package jquant.cli;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import jquant.formats.jqw.JqwFile;
import jquant.reports.EvalResult;
import jquant.core.WorkerPool;
import jquant.testsupport.SharedFiles;
import jquant.testsupport.Slow;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;

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
    }
}
