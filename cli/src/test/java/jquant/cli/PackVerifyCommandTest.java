package jquant.cli;

import jquant.formats.Checkpoint;
import jquant.formats.Checkpoints;
import jquant.formats.TensorKind;
import jquant.formats.jqw.JqwFile;
import jquant.quantize.BitPlanJson;
import jquant.quantize.ErrorTable;
import jquant.quantize.GreedyBitAllocator;
import jquant.quantize.Metric;
import jquant.quantize.RelativeError;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.RandomAccessFile;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

class PackVerifyCommandTest {

    @Test
    void packVerifyEvalAndAFlippedByte(@TempDir Path dir) throws Exception {
        Path model = CliTest.shared("stories260K.bin"), tok = CliTest.shared("tok512.bin");
        Path plan = dir.resolve("plan.json");
        try (Checkpoint c = Checkpoints.open(model, tok)) {
            List<ErrorTable> tables = new ArrayList<>();
            for (int l = 0; l < c.config().layers(); l++) {
                for (TensorKind k : TensorKind.values()) {
                    if (!k.isBlockLinear()) continue;
                    var t = c.tensor(k, l);
                    tables.add(RelativeError.table(k.canonicalName(l), t.toFloats(), t.rows(), t.cols(), Metric.APPROX, null));
                }
            }
            BitPlanJson.write(GreedyBitAllocator.allocate(tables, 5), plan);
        }
        Path text = dir.resolve("calib.txt");
        Files.writeString(text, Files.readString(Path.of(System.getProperty("jquant.shared", "../shared"), "data", "tinystories-valid-sample.txt")).substring(0, 3000));
        Path jqw = dir.resolve("m.jqw");
        CliTest.Result pack = CliTest.run("pack", model.toString(), "--tokenizer", tok.toString(), "--plan", plan.toString(),
                "--act-ranges-from", text.toString(), "--out", jqw.toString());
        assertThat(pack.code()).as(pack.err()).isZero();
        assertThat(pack.out()).contains("with activation ranges");

        CliTest.Result verify = CliTest.run("verify", jqw.toString(), "--source", model.toString(), "--tokenizer", tok.toString());
        assertThat(verify.code()).as(verify.err()).isZero();
        assertThat(verify.out()).contains("all bytes and checksums match");

        for (String mode : new String[]{"weight-only", "npu"}) {
            CliTest.Result eval = CliTest.run("eval", jqw.toString(), "--mode", mode, "--data", text.toString(), "--ctx", "64",
                    "--base", model.toString(), "--tokenizer", tok.toString());
            assertThat(eval.code()).as(eval.err()).isZero();
            assertThat(eval.out()).contains("[" + mode + "]", "perplexity", "top-1 agreement");
        }
        CliTest.Result run = CliTest.run("run", jqw.toString(), "--mode", "npu", "-p", "Once upon a time", "-n", "8");
        assertThat(run.code()).as(run.err()).isZero();

        long at;
        try (JqwFile f = JqwFile.open(jqw)) {
            at = f.tensors().get("blk.3.attn_v").part("scales")[0] + 4 * 5;
        }
        try (RandomAccessFile r = new RandomAccessFile(jqw.toFile(), "rw")) {
            r.seek(at);
            int b = r.read();
            r.seek(at);
            r.write(b ^ 0x40);
        }
        CliTest.Result bad = CliTest.run("verify", jqw.toString(), "--source", model.toString(), "--tokenizer", tok.toString());
        assertThat(bad.code()).isEqualTo(1);
        assertThat(bad.err()).contains("blk.3.attn_v: part scales differs at byte 20 (channel 5)");
        CliTest.Result load = CliTest.run("eval", jqw.toString(), "--data", text.toString());
        assertThat(load.code()).isEqualTo(1);
        assertThat(load.err()).contains("checksum mismatch in layer layer.3");
    }
}
