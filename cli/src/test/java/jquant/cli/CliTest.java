package jquant.cli;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import jquant.core.WorkerPool;
import jquant.testsupport.SharedFiles;
import jquant.testsupport.Slow;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

class CliTest {

    /** Exit code, stdout and stderr of one CLI invocation. */
    record Result(int code, String out, String err) {}

    static Result run(String... args) {
        StringWriter out = new StringWriter(), err = new StringWriter();
        int code = Main.commandLine(args).setOut(new PrintWriter(out, true)).setErr(new PrintWriter(err, true)).execute(args);
        return new Result(code, out.toString(), err.toString());
    }

    @Test
    void versionAndHelpExitZero() {
        assertThat(run("--version").out()).startsWith("jquant ");
        Result help = run("--help");
        assertThat(help.code()).isZero();
        assertThat(help.out()).contains("inspect", "demo");
    }

    /** Only the named subcommand is built; help, a mistyped name and options before the name still behave as with all of them. */
    @Test
    void subcommandFoundAfterTopLevelOptions() {
        assertThat(run("help", "run").out()).contains("Usage: jquant run");
        // The pool's own count: other tests in this JVM may have started it, and it cannot change then.
        String threads = String.valueOf(Runtime.getRuntime().availableProcessors());
        assertThat(run("--threads", threads, "-q", "run", "--help").out()).contains("Usage: jquant run");
        Result typo = run("evl");
        assertThat(typo.code()).isEqualTo(2);
        assertThat(typo.err()).contains("Unmatched argument at index 0: 'evl'");
    }

    /**
     * {@code --threads N} sizes the process's one worker pool, given before the subcommand's name or
     * after it, as {@code --verbose} reports the pool; N is never the default (one per processor), so
     * an ignored flag fails. In processes of their own: this one's pool may already be sized.
     */
    @Test
    void threadsSizesThePoolWhereverItIsGiven(@TempDir Path dir) throws Exception {
        String threads = String.valueOf(Runtime.getRuntime().availableProcessors() + 1);
        String model = SharedFiles.model("stories260K.bin").toString();
        String java = ProcessHandle.current().info().command().orElseThrow();
        List<List<String>> placements = List.of(List.of("--threads", threads, "--verbose", "inspect", model),
                List.of("inspect", model, "--threads", threads, "--verbose"));
        for (List<String> args : placements) {
            List<String> command = new ArrayList<>(List.of(java, "--add-modules", "jdk.incubator.vector", "--enable-native-access=ALL-UNNAMED",
                    "-cp", System.getProperty("java.class.path"), Main.class.getName()));
            command.addAll(args);
            Path err = dir.resolve("err.txt");
            Process p = new ProcessBuilder(command).redirectOutput(ProcessBuilder.Redirect.DISCARD).redirectError(err.toFile()).start();
            assertThat(p.waitFor()).as(Files.readString(err)).isZero();
            assertThat(Files.readString(err)).as(String.join(" ", args)).contains(", " + threads + " threads");
        }
    }

    /** {@code bench ternary --quick}, as its usage line says (it was once refused as an unknown option). */
    @Test
    void benchTernaryTakesItsQuickOption() {
        String[] args = {"bench", "ternary", "--quick"};
        CommandLine.ParseResult parsed = Main.commandLine(args).parseArgs(args);
        assertThat(parsed.subcommand().subcommand().hasMatchedOption("--quick")).isTrue();
    }

    @Test
    void usageErrorsExitTwo() {
        assertThat(run("inspect").code()).isEqualTo(CommandLine.ExitCode.USAGE);
        assertThat(run("no-such-command").code()).isEqualTo(2);
        assertThat(run("inspect", "--no-such-option", "x").code()).isEqualTo(2);
    }

    /** An unknown option or command names the nearest known one. */
    @Test
    void unknownNamesSuggestTheNearest() {
        Result option = run("eval", "model.bin", "--data", "text.txt", "--ctxx", "64");
        assertThat(option.code()).isEqualTo(2);
        assertThat(option.err().strip()).isEqualTo("jquant: Unknown options: '--ctxx', '64'; did you mean --ctx? (see 'jquant eval --help')");
        assertThat(run("evl").err()).contains("'evl'; did you mean eval?");
        assertThat(run("repack", "m.gguf", "--tpye", "t2p", "--out", "x.gguf").err()).contains("did you mean --type?");
    }

    /**
     * One name per meaning, llama.cpp's where it has one: the ternary layout is --type in ternarize, repack and pack;
     * run's generated tokens are -n/--n-predict (--tokens is calibration tokens); eval writes to --out like every
     * command; repack takes --tokenizer. The old names still parse, each saying what it is now.
     */
    @Test
    void optionNamesAreConsistentAndOldNamesStillWork() {
        String[][] current = {{"repack", "m.gguf", "--type", "t2p", "--tokenizer", "tok.bin", "--out", "x.gguf"},
                {"pack", "m.gguf", "--type", "t2p", "--out", "x.gguf"}, {"ternarize", "m.bin", "--type", "t2p", "--out", "x.gguf"},
                {"run", "m.bin", "--n-predict", "3"}, {"eval", "m.bin", "--data", "t.txt", "--out", "e.json"}};
        for (String[] args : current) {
            StringWriter err = new StringWriter();
            CommandLine cli = Main.commandLine(args).setErr(new PrintWriter(err, true));
            CommandLine.ParseResult parsed = cli.parseArgs(args);
            assertThat(parsed.subcommand().matchedOptions()).as(String.join(" ", args)).isNotEmpty();
            assertThat(err.toString()).isEmpty();
        }
        String[][] old = {{"repack", "m.gguf", "--format", "t2p", "--out", "x.gguf"}, {"pack", "m.gguf", "--format", "t2p", "--out", "x.gguf"},
                {"run", "m.bin", "--tokens", "3"}, {"eval", "m.bin", "--data", "t.txt", "--json", "e.json"}};
        String[] was = {"--format", "--format", "--tokens", "--json"}, now = {"--type", "--type", "--n-predict (-n)", "--out"};
        for (int i = 0; i < old.length; i++) {
            StringWriter err = new StringWriter();
            CommandLine cli = Main.commandLine(old[i]).setErr(new PrintWriter(err, true));
            Object command = cli.parseArgs(old[i]).subcommand().commandSpec().userObject();
            assertThat(err.toString().strip()).isEqualTo("jquant: " + was[i] + " is now " + now[i] + " (the old name still works)");
            switch (command) {
                case RepackCommand r -> assertThat(r.type).isEqualTo("t2p");
                case PackCommand p -> assertThat(p.format).isEqualTo("t2p");
                case RunCommand r -> assertThat(r.tokens).isEqualTo(3);
                case EvalCommand e -> assertThat(e.json).isEqualTo(Path.of("e.json"));
                default -> throw new AssertionError(command);
            }
        }
    }

    @Test
    void inputErrorsAreOneLineAndExitOne(@TempDir Path dir) throws Exception {
        Result missing = run("inspect", dir.resolve("missing.bin").toString());
        assertThat(missing.code()).isEqualTo(1);
        assertThat(missing.err().strip()).startsWith("jquant: ").contains("missing.bin").doesNotContain("\n").doesNotContain("Exception");
        Path garbage = dir.resolve("garbage.bin");
        Files.write(garbage, new byte[]{1, 2, 3});
        Result bad = run("inspect", garbage.toString());
        assertThat(bad.code()).isEqualTo(1);
        assertThat(bad.err()).contains("garbage.bin").doesNotContain("\tat ");
        assertThat(run("inspect", "--verbose", garbage.toString()).err()).contains("\tat ");
    }

    /** inspect's tables stay in line with names longer than their old fixed widths (blk.0.attn_output), and its numbers have thousands separators. */
    @Test
    void inspectTablesAlignAndSeparateThousands() {
        Result r = run("inspect", SharedFiles.model("tinystories-6M/tinystories-6M-Q8_0.gguf").toString());
        assertThat(r.code()).as(r.err()).isZero();
        assertThat(r.out()).contains("rope theta 10,000, rms eps 0.00001,", "blk.0.attn_output  ", "768×256");
        assertAligned(r.out(), "name", "canonical", "shape", "dtype");
    }

    /**
     * The table whose header starts with the first of {@code textColumns} (after two spaces) is in line: every row as
     * long as the header, whose last column is right-aligned, and each cell of the left-aligned columns named
     * starting where its header does.
     */
    static void assertAligned(String out, String... textColumns) {
        List<String> lines = out.lines().toList();
        int at = lines.indexOf(lines.stream().filter(l -> l.startsWith("  " + textColumns[0] + " ")).findFirst().orElseThrow(() -> new AssertionError(out)));
        String header = lines.get(at);
        List<String> rows = lines.subList(at + 1, lines.size()).stream().takeWhile(l -> !l.isBlank()).toList();
        assertThat(rows).as(out).isNotEmpty();
        for (String name : textColumns) {
            int column = header.indexOf("  " + name) + 2;
            for (String row : rows) {
                assertThat(row.charAt(column - 1)).as("before %s in %s", name, row).isEqualTo(' ');
                assertThat(row.charAt(column)).as("at %s in %s", name, row).isNotEqualTo(' ');
            }
        }
        for (String row : rows) assertThat(row).as("under\n" + header).hasSize(header.length());
    }

    @Test
    void inspectJsonDescribesStories260k() throws Exception {
        Result r = run("inspect", "--json", SharedFiles.model("stories260K.bin").toString());
        assertThat(r.code()).isZero();
        JsonNode json = new ObjectMapper().readTree(r.out());
        assertThat(json.at("/config/dim").asInt()).isEqualTo(64);
        assertThat(json.at("/config/layers").asInt()).isEqualTo(5);
        assertThat(json.at("/tensors").size()).isEqualTo(1 + 9 * 5 + 1 + 2);
        assertThat(json.at("/totals/bytes").asLong()).isEqualTo(Files.size(SharedFiles.model("stories260K.bin")) - 28);
        assertThat(json.at("/vocabulary/size").asInt()).isEqualTo(512);
    }

    @Test
    @Slow
    void generatedDemoIsDeterministicAndReadable(@TempDir Path dir) throws Exception {
        Result first = run("demo", "--generated", "--out", dir.resolve("a").toString());
        assertThat(first.code()).as(first.err()).isZero();
        assertThat(first.out()).contains("$ jquant inspect", "dim 256, hidden 768, layers 2", "$ jquant calibrate", "$ jquant allocate");
        assertThat(run("demo", "--generated", "--out", dir.resolve("b").toString()).code()).isZero();
        for (String f : new String[]{"model.bin", "tokenizer.bin", "story.txt", "stats.gguf", "plan.json"}) {
            assertThat(Files.mismatch(dir.resolve("a").resolve(f), dir.resolve("b").resolve(f))).as(f).isEqualTo(-1L);
        }
        assertThat(run("demo", "--generated", "--out", dir.resolve("c").toString(), "--seed", "7").code()).isZero();
        assertThat(Files.mismatch(dir.resolve("a/model.bin"), dir.resolve("c/model.bin"))).isNotEqualTo(-1L);
    }

    @Test
    @Slow
    void demoRunsThePipelineOnStories260kWithRealQualityFigures(@TempDir Path dir) throws Exception {
        Result r = run("demo", "--out", dir.toString());
        assertThat(r.code()).as(r.err()).isZero();
        assertThat(r.out()).contains("dim 64, hidden 172, layers 5", "$ jquant calibrate", "$ jquant allocate", "$ jquant pack",
                "$ jquant verify", "all bytes and checksums match", "$ jquant eval", "[npu]", "$ jquant report");
        assertThat(Files.size(dir.resolve("stories260K.bin"))).isEqualTo(1_056_540L);
        JsonNode report = new ObjectMapper().readTree(dir.resolve("report/report.json").toFile());
        assertThat(report.at("/evaluations").size()).isEqualTo(3);
        assertThat(report.at("/evaluations/0/perplexity").asDouble()).isBetween(3.0, 6.0);
        for (int i = 1; i <= 2; i++) {
            assertThat(report.at("/evaluations/" + i + "/perplexity").asDouble()).isBetween(3.0, 6.0);
            assertThat(report.at("/evaluations/" + i + "/top1Agreement").asDouble()).isGreaterThan(0.8);
        }
        assertThat(run("demo", "--out", dir.resolve("x").toString(), "--seed", "7").code()).isEqualTo(2);
    }
}
