package jquant.cli;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import jquant.formats.jqw.JqwFile;
import jquant.testsupport.SharedFiles;
import jquant.testsupport.Slow;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.RandomAccessFile;
import java.nio.file.Files;
import java.nio.file.Path;

import static org.assertj.core.api.Assertions.assertThat;

@Slow
class PackVerifyCommandTest {

    static String sample() throws Exception {
        return Files.readString(SharedFiles.data("tinystories-valid-sample.txt"));
    }

    @Test
    void calibratedPackVerifyInspectEvalAndAFlippedByte(@TempDir Path dir) throws Exception {
        Path model = SharedFiles.model("stories260K.bin"), tok = SharedFiles.model("tok512.bin");
        Path text = dir.resolve("calib.txt"), stats = dir.resolve("stats.gguf"), plan = dir.resolve("plan.json"), rawPlan = dir.resolve("raw.json");
        Files.writeString(text, sample().substring(0, 3000));
        assertThat(CliTest.run("calibrate", model.toString(), "--data", text.toString(), "--tokens", "512", "--out", stats.toString()).code()).isZero();
        assertThat(CliTest.run("allocate", model.toString(), "--budget", "5", "--stats", stats.toString(), "--out", plan.toString()).code()).isZero();
        assertThat(CliTest.run("allocate", model.toString(), "--budget", "5", "--out", rawPlan.toString()).code()).isZero();

        Path jqw = dir.resolve("m.jqw");
        CliTest.Result mixed = CliTest.run("pack", model.toString(), "--plan", plan.toString(), "--out", jqw.toString());
        assertThat(mixed.code()).isEqualTo(1);
        assertThat(mixed.err()).contains("allocated on smoothed weights", "--stats");
        CliTest.Result mixed2 = CliTest.run("pack", model.toString(), "--plan", rawPlan.toString(), "--stats", stats.toString(), "--out", jqw.toString());
        assertThat(mixed2.code()).isEqualTo(1);
        assertThat(mixed2.err()).contains("allocated on the raw weights");
        assertThat(jqw).doesNotExist();

        CliTest.Result pack = CliTest.run("pack", model.toString(), "--tokenizer", tok.toString(), "--plan", plan.toString(),
                "--stats", stats.toString(), "--out", jqw.toString());
        assertThat(pack.code()).as(pack.err()).isZero();
        assertThat(pack.out()).contains("static activation scales");

        CliTest.Result verify = CliTest.run("verify", jqw.toString(), "--source", model.toString(), "--stats", stats.toString());
        assertThat(verify.code()).as(verify.err()).isZero();
        assertThat(verify.out()).contains("all bytes and checksums match");
        CliTest.Result noStats = CliTest.run("verify", jqw.toString(), "--source", model.toString());
        assertThat(noStats.code()).isEqualTo(1);
        assertThat(noStats.err()).contains("was packed with calibration stats", "--stats");

        CliTest.Result inspect = CliTest.run("inspect", jqw.toString(), "--json");
        assertThat(inspect.code()).as(inspect.err()).isZero();
        JsonNode report = new ObjectMapper().readTree(inspect.out());
        assertThat(report.at("/quantization/smoothing/alpha/blk.0.attn_qkv").isNumber()).isTrue();
        assertThat(report.at("/layers").size()).isEqualTo(7);
        JsonNode q = report.at("/tensors").findParents("name").stream().filter(n -> n.get("name").asText().equals("blk.0.attn_q")).findFirst().orElseThrow();
        int channels = 0;
        for (JsonNode n : q.get("bitHistogram")) channels += n.asInt();
        assertThat(channels).isEqualTo(64);
        CliTest.Result table = CliTest.run("inspect", jqw.toString());
        assertThat(table.out()).contains("layer.4", "blk.4.ffn_down", "smoothing",
                "; kept as auto: the embedding (token_embd) in q8, the head (output) (tied to the embedding);", "  35,008  ").doesNotContain("float32", "[\"");
        CliTest.assertAligned(table.out(), "layer");

        for (String mode : new String[]{"weight-only", "npu"}) {
            CliTest.Result eval = CliTest.run("eval", jqw.toString(), "--mode", mode, "--data", text.toString(), "--ctx", "64",
                    "--base", model.toString(), "--tokenizer", tok.toString());
            assertThat(eval.code()).as(eval.err()).isZero();
            assertThat(eval.out()).contains("[" + mode + "]", "perplexity", "top-1 agreement");
        }
        // decode on the weightlet lanes copy (the default on AVX-512; as stored elsewhere) writes the stored layout's text
        CliTest.Result stored = CliTest.run("run", jqw.toString(), "--kernels", "stored", "-p", "Once upon a time", "-n", "24");
        CliTest.Result lanes = CliTest.run("run", jqw.toString(), "-p", "Once upon a time", "-n", "24");
        assertThat(stored.code()).as(stored.err()).isZero();
        assertThat(lanes.code()).as(lanes.err()).isZero();
        assertThat(lanes.out()).isEqualTo(stored.out()).contains("Once upon a time");
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
        CliTest.Result bad = CliTest.run("verify", jqw.toString(), "--source", model.toString(), "--stats", stats.toString());
        assertThat(bad.code()).isEqualTo(1);
        assertThat(bad.err()).contains("blk.3.attn_v: part scales differs at byte 20 (channel 5)");
        CliTest.Result load = CliTest.run("eval", jqw.toString(), "--data", text.toString());
        assertThat(load.code()).isEqualTo(1);
        assertThat(load.err()).contains("checksum mismatch in layer layer.3");
    }

    /** GPTQ rounding: needs E[x·xᵀ] from calibrate --second-moments, keeps the plan's widths, and verify recomputes it byte for byte. */
    @Test
    void gptqRoundingPacksAndVerifies(@TempDir Path dir) throws Exception {
        Path model = SharedFiles.model("stories260K.bin");
        Path text = dir.resolve("calib.txt"), stats = dir.resolve("stats.gguf"), plain = dir.resolve("plain.gguf"), plan = dir.resolve("plan.json");
        Files.writeString(text, sample().substring(0, 3000));
        assertThat(CliTest.run("calibrate", model.toString(), "--data", text.toString(), "--tokens", "512", "--budgets", "4", "--out", plain.toString()).code()).isZero();
        CliTest.Result calibrate = CliTest.run("calibrate", model.toString(), "--data", text.toString(), "--tokens", "512", "--budgets", "4",
                "--second-moments", "--out", stats.toString());
        assertThat(calibrate.code()).as(calibrate.err()).isZero();
        assertThat(calibrate.out()).contains("E[x·xᵀ] recorded");
        assertThat(CliTest.run("allocate", model.toString(), "--budget", "4", "--stats", stats.toString(), "--out", plan.toString()).code()).isZero();

        Path jqw = dir.resolve("gptq.jqw");
        CliTest.Result noMoments = CliTest.run("allocate", model.toString(), "--budget", "4", "--stats", plain.toString(), "--out", dir.resolve("p2.json").toString());
        assertThat(noMoments.code()).isZero();
        CliTest.Result refused = CliTest.run("pack", model.toString(), "--plan", dir.resolve("p2.json").toString(), "--stats", plain.toString(),
                "--rounding", "gptq", "--out", jqw.toString());
        assertThat(refused.code()).isEqualTo(1);
        assertThat(refused.err()).contains("--second-moments");
        assertThat(CliTest.run("pack", model.toString(), "--plan", plan.toString(), "--rounding", "gptq", "--out", jqw.toString()).code()).isEqualTo(2);
        assertThat(jqw).doesNotExist();

        CliTest.Result pack = CliTest.run("pack", model.toString(), "--plan", plan.toString(), "--stats", stats.toString(), "--rounding", "gptq", "--out", jqw.toString());
        assertThat(pack.code()).as(pack.err()).isZero();
        assertThat(pack.out()).contains("gptq rounding");
        CliTest.Result verify = CliTest.run("verify", jqw.toString(), "--source", model.toString(), "--stats", stats.toString());
        assertThat(verify.code()).as(verify.err()).isZero();
        assertThat(verify.out()).contains("all bytes and checksums match");
        JsonNode report = new ObjectMapper().readTree(CliTest.run("inspect", jqw.toString(), "--json").out());
        assertThat(report.at("/quantization/rounding").asText()).isEqualTo("gptq");
    }

}
