package jquant.cli;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import jquant.core.WorkerPool;
import jquant.testsupport.SharedFiles;
import jquant.testsupport.Slow;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static jquant.cli.CliTest.run;
import static org.assertj.core.api.Assertions.assertThat;

@Slow
class RunEvalCommandTest {

    /** BOS then the 200 ids run.c fed or sampled at positions 0..199 in generation 1 of the golden file. */
    private static int[] goldenIds() throws Exception {
        String golden = Files.readString(SharedFiles.model("golden_generation.txt"));
        Matcher m = Pattern.compile("first 4 are the forced prompt tokens\\): ([0-9 ]+)").matcher(golden);
        assertThat(m.find()).as("golden file lists the token ids").isTrue();
        return java.util.stream.IntStream.concat(java.util.stream.IntStream.of(1),
                Arrays.stream(m.group(1).trim().split(" ")).mapToInt(Integer::parseInt)).toArray();
    }

    @Test
    void greedyRunReproducesTheGoldenTokensFromEveryFormat() throws Exception {
        for (String model : new String[]{"stories260K.bin", "stories260K-hf", "stories260K-f32.gguf"}) {
            CliTest.Result r = run("run", SharedFiles.model(model).toString(), "-p", "Once upon a time", "-n", "196", "--ids");
            assertThat(r.code()).as(r.err()).isZero();
            String[] lines = r.out().strip().split("\n");
            int[] ids = Arrays.stream(lines[lines.length - 1].replaceAll("[\\[\\],]", " ").trim().split("\\s+")).mapToInt(Integer::parseInt).toArray();
            assertThat(ids).as(model).containsExactly(goldenIds());
            assertThat(r.out()).startsWith("Once upon a time");
        }
    }

    @Test
    void evalWritesJsonAndAgreesAcrossFormats(@TempDir Path dir) throws Exception {
        Path text = dir.resolve("text.txt");
        // A few kilobytes of the real evaluation text keep this test quick.
        Files.writeString(text, Files.readString(SharedFiles.data("tinystories-valid-sample.txt")).substring(0, 20_000));
        double first = Double.NaN;
        for (String model : new String[]{"stories260K.bin", "stories260K-hf", "stories260K-f32.gguf"}) {
            Path json = dir.resolve(model + ".json");
            CliTest.Result r = run("eval", SharedFiles.model(model).toString(), "--data", text.toString(), "--ctx", "128", "--out", json.toString());
            assertThat(r.code()).as(r.err()).isZero();
            JsonNode j = new ObjectMapper().readTree(json.toFile());
            double ppl = j.at("/result/perplexity").asDouble();
            assertThat(ppl).isFinite().isGreaterThan(1);
            assertThat(j.at("/result/scored").asInt()).isEqualTo(j.at("/result/windows").asInt() * 63);
            assertThat(j.at("/threads").asInt()).isEqualTo(Runtime.getRuntime().availableProcessors());
            if (Double.isNaN(first)) first = ppl;
            assertThat(ppl).as(model).isCloseTo(first, org.assertj.core.data.Percentage.withPercentage(1e-4));
        }
        CliTest.Result cmp = run("eval", SharedFiles.model("stories260K-Q8_0.gguf").toString(), "--data", text.toString(), "--ctx", "128",
                "--base", SharedFiles.model("stories260K.bin").toString());
        assertThat(cmp.code()).as(cmp.err()).isZero();
        assertThat(cmp.out()).contains("KL divergence", "top-1 agreement");

        CliTest.Result report = run("report", dir.resolve("stories260K.bin.json").toString(), dir.resolve("stories260K-hf.json").toString(),
                "--out", dir.resolve("report").toString());
        assertThat(report.code()).as(report.err()).isZero();
        assertThat(Files.readString(dir.resolve("report/report.md"))).contains("| checkpoint |  | 1,056,540 |", "| checkpoint |  | 1,184,567 |");
        assertThat(dir.resolve("report/report.html")).exists();
        assertThat(run("report", text.toString(), "--out", dir.resolve("bad").toString()).code()).isEqualTo(1);
        assertThat(dir.resolve("bad")).doesNotExist();
    }

    /** {@code --threads} is recorded in the eval JSON; in a process of its own, since this one's pool is already sized. */
    @Test
    void evalJsonRecordsTheThreadsGiven(@TempDir Path dir) throws Exception {
        Path text = Files.writeString(dir.resolve("text.txt"), Files.readString(SharedFiles.data("tinystories-valid-sample.txt")).substring(0, 5_000));
        Path json = dir.resolve("eval.json");
        int threads = Runtime.getRuntime().availableProcessors() + 1;
        String java = ProcessHandle.current().info().command().orElseThrow();
        Process p = new ProcessBuilder(java, "--add-modules", "jdk.incubator.vector", "--enable-native-access=ALL-UNNAMED",
                "-cp", System.getProperty("java.class.path"), Main.class.getName(), "--threads", Integer.toString(threads), "eval",
                SharedFiles.model("stories260K.bin").toString(), "--data", text.toString(), "--ctx", "128", "--quiet", "--out", json.toString())
                .redirectErrorStream(true).redirectOutput(dir.resolve("eval.log").toFile()).start();
        assertThat(p.waitFor()).as(Files.readString(dir.resolve("eval.log"))).isZero();
        assertThat(new ObjectMapper().readTree(json.toFile()).at("/threads").asInt()).isEqualTo(threads);
    }

    /**
     * {@code eval --shards 3} (Beam's direct runner) writes the JSON the one-process eval writes but for its seconds, and
     * prints the same figures; a worker's error comes back as the same one line, a too-long --ctx as the same usage error,
     * and no folder of parts is left beside the output.
     */
    @Test
    void shardedEvalIsTheOneProcessEvalDigitForDigit(@TempDir Path dir) throws Exception {
        String model = SharedFiles.model("stories260K.bin").toString();
        Path text = Files.writeString(dir.resolve("text.txt"), Files.readString(SharedFiles.data("tinystories-valid-sample.txt")).substring(0, 8_000));
        Path whole = dir.resolve("whole.json"), sharded = dir.resolve("sharded.json");
        CliTest.Result one = run("eval", model, "--data", text.toString(), "--ctx", "64", "--mode", "npu", "--out", whole.toString());
        CliTest.Result three = run("eval", model, "--data", text.toString(), "--ctx", "64", "--mode", "npu", "--shards", "3", "--out", sharded.toString());
        assertThat(three.code()).as(three.err()).isZero();
        ObjectMapper json = new ObjectMapper();
        JsonNode a = json.readTree(whole.toFile()), b = json.readTree(sharded.toFile());
        ((com.fasterxml.jackson.databind.node.ObjectNode) a).remove("seconds");
        ((com.fasterxml.jackson.databind.node.ObjectNode) b).remove("seconds");
        assertThat(b).isEqualTo(a);
        assertThat(three.out().lines().filter(l -> l.contains("perplexity"))).containsExactlyElementsOf(one.out().lines().filter(l -> l.contains("perplexity")).toList());
        try (var files = Files.list(dir)) {
            assertThat(files.map(f -> f.getFileName().toString())).containsExactlyInAnyOrder("text.txt", "whole.json", "sharded.json");
        }

        Path latin1 = Files.write(dir.resolve("latin1.txt"), new byte[]{'c', 'a', 'f', (byte) 0xE9, ' ', 'o', 'k'});
        CliTest.Result bad = run("eval", model, "--data", latin1.toString(), "--shards", "2");
        assertThat(bad.code()).isEqualTo(1);
        assertThat(bad.err().strip()).doesNotContain("\n").contains("latin1.txt", "not valid UTF-8");
        CliTest.Result ctx = run("eval", model, "--data", text.toString(), "--ctx", "4096", "--shards", "2");
        assertThat(ctx.code()).isEqualTo(2);
        assertThat(ctx.err()).contains("--ctx 4096 exceeds the model's maximum of 512 positions");
    }

    @Test
    void badTextAndContextAreClearErrors(@TempDir Path dir) throws Exception {
        String model = SharedFiles.model("stories260K.bin").toString();
        Path empty = Files.write(dir.resolve("empty.txt"), new byte[0]);
        assertThat(run("eval", model, "--data", empty.toString()).err()).contains("empty.txt", "empty");
        Path latin1 = Files.write(dir.resolve("latin1.txt"), new byte[]{'c', 'a', 'f', (byte) 0xE9, ' ', 'o', 'k'});
        CliTest.Result bad = run("eval", model, "--data", latin1.toString());
        assertThat(bad.code()).isEqualTo(1);
        assertThat(bad.err()).contains("latin1.txt", "not valid UTF-8");
        Path shortText = Files.writeString(dir.resolve("short.txt"), "Once upon a time there was a cat.");
        CliTest.Result tooShort = run("eval", model, "--data", shortText.toString());
        assertThat(tooShort.code()).isEqualTo(1);
        assertThat(tooShort.err()).contains("needs at least");
        CliTest.Result ctx = run("eval", model, "--data", shortText.toString(), "--ctx", "4096");
        assertThat(ctx.code()).isEqualTo(2);
        assertThat(ctx.err()).contains("--ctx 4096 exceeds the model's maximum of 512 positions");
        assertThat(run("eval", model, "--data", shortText.toString(), "--out", shortText.toString()).err()).contains("short.txt: is an input of this run");
        assertThat(run("run", model, "-n", "-3").code()).isEqualTo(2);
    }

    /** A base checkpoint without a tokenizer beside it reads the packed model's (eval demanded --tokenizer). */
    @Test
    void evalBaseWithoutTokenizerReadsThePackedModels(@TempDir Path dir) throws Exception {
        Path alone = Files.copy(SharedFiles.model("stories260K.bin"), dir.resolve("model.bin"));
        Path plan = dir.resolve("plan.json"), jqw = dir.resolve("model.jqw");
        Path text = Files.writeString(dir.resolve("text.txt"), Files.readString(SharedFiles.data("tinystories-valid-sample.txt")).substring(0, 5_000));
        assertThat(run("allocate", alone.toString(), "--budget", "5", "--out", plan.toString()).code()).isZero();
        String tokenizer = SharedFiles.model("tok512.bin").toString();
        assertThat(run("pack", alone.toString(), "--tokenizer", tokenizer, "--plan", plan.toString(), "--out", jqw.toString()).code()).isZero();
        for (List<String> how : List.of(List.<String>of(), List.of("--layerwise"))) {
            List<String> args = new ArrayList<>(List.of("eval", jqw.toString(), "--data", text.toString(), "--ctx", "64", "--base", alone.toString()));
            args.addAll(how);
            CliTest.Result r = run(args.toArray(String[]::new));
            assertThat(r.code()).as(r.err()).isZero();
            args.addAll(List.of("--tokenizer", tokenizer));
            CliTest.Result withTokenizer = run(args.toArray(String[]::new));
            assertThat(figures(r.out())).as(how.toString()).isEqualTo(figures(withTokenizer.out())).contains("base perplexity");
        }
    }

    /** What eval printed but its time. */
    private static String figures(String out) {
        return out.replaceAll("(?m)^  [0-9.]+ s$", "");
    }

    @Test
    void modelWithoutTokenizerIsAClearError(@TempDir Path dir) throws Exception {
        Path alone = Files.copy(SharedFiles.model("stories260K.bin"), dir.resolve("model.bin"));
        CliTest.Result r = run("run", alone.toString(), "-p", "Hi");
        assertThat(r.code()).isEqualTo(1);
        assertThat(r.err()).contains("model.bin", "no tokenizer found");
        assertThat(run("run", alone.toString(), "-p", "Hi", "-n", "3", "--tokenizer", SharedFiles.model("tok512.bin").toString()).code()).isZero();
    }
}
