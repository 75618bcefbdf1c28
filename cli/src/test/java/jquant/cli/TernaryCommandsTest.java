package jquant.cli;

import jquant.formats.CheckpointException;
import jquant.formats.DType;
import jquant.formats.Tensor;
import jquant.formats.Vocabulary;
import jquant.formats.gguf.GgufFile;
import jquant.formats.gguf.GgufValue;
import jquant.formats.gguf.GgufWriter;
import jquant.formats.llama2c.Llama2cWriter;
import jquant.formats.synthetic.SyntheticLlama;
import jquant.formats.synthetic.SyntheticVocabulary;
import jquant.testsupport.SharedFiles;
import jquant.testsupport.Slow;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SequencedMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static jquant.cli.CliTest.run;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@code ternarize}, {@code repack} and the ternary runtime end to end: the same ternary model in
 * its stock layout and repacked to T2P (on file, or at load with {@code --kernels t2p}) gives the
 * same printed perplexity and the same greedy tokens; metadata survives; non-ternary input is
 * refused with the value named; shapes T2P cannot hold keep their layout, reported.
 */
@Slow
class TernaryCommandsTest {

    private static final Pattern PERPLEXITY = Pattern.compile("perplexity\\s+(\\S+ ± \\S+)");

    /** The first ~1,500 characters of the TinyStories validation sample, at a line end. */
    private static Path shortText(Path dir) throws Exception {
        Path sample = SharedFiles.data("tinystories-valid-sample.txt");
        String text = Files.readString(sample);
        Path out = dir.resolve("short.txt");
        Files.writeString(out, text.substring(0, text.indexOf('\n', 1500) + 1));
        return out;
    }

    private static String perplexity(String model, Path text, String... extra) {
        String[] args = new String[]{"eval", model, "--data", text.toString(), "--ctx", "128"};
        CliTest.Result r = run(concat(args, extra));
        assertThat(r.code()).as(r.err()).isZero();
        Matcher m = PERPLEXITY.matcher(r.out());
        assertThat(m.find()).as(r.out()).isTrue();
        return m.group(1);
    }

    private static String greedyIds(String model, String... extra) {
        CliTest.Result r = run(concat(new String[]{"run", model, "-p", "Once upon a time", "-n", "24", "--ids"}, extra));
        assertThat(r.code()).as(r.err()).isZero();
        String[] lines = r.out().strip().split("\n");
        return lines[lines.length - 1];
    }

    private static String[] concat(String[] a, String[] b) {
        String[] out = java.util.Arrays.copyOf(a, a.length + b.length);
        System.arraycopy(b, 0, out, a.length, b.length);
        return out;
    }

    private static Map<DType, Integer> typeCounts(Path gguf) throws CheckpointException {
        Map<DType, Integer> counts = new LinkedHashMap<>();
        try (GgufFile f = GgufFile.open(gguf)) {
            for (Tensor t : f.tensors().values()) counts.merge(t.dtype(), 1, Integer::sum);
        }
        return counts;
    }

    /** Asserts stock file, T2P file and stock file with T2P at load agree on perplexity and greedy tokens. */
    private static void assertSameModel(Path stock, Path t2p, Path text) {
        String ppl = perplexity(stock.toString(), text);
        assertThat(perplexity(t2p.toString(), text)).isEqualTo(ppl);
        assertThat(perplexity(stock.toString(), text, "--kernels", "t2p")).isEqualTo(ppl);
        String ids = greedyIds(stock.toString());
        assertThat(greedyIds(t2p.toString())).isEqualTo(ids);
        assertThat(greedyIds(stock.toString(), "--kernels", "t2p")).isEqualTo(ids);
    }

    @Test
    void ternarizedGeneratedModelRunsIdenticallyStockAndT2p(@TempDir Path dir) throws Exception {
        Vocabulary vocab = SyntheticVocabulary.build(DemoCommand.demoText(), DemoCommand.DEMO_CONFIG.vocabSize());
        Path bin = dir.resolve("model.bin");
        Llama2cWriter.writeTokenizer(dir.resolve("tokenizer.bin"), vocab);
        Llama2cWriter.writeCheckpoint(bin, DemoCommand.DEMO_CONFIG, new SyntheticLlama(DemoCommand.DEMO_CONFIG, 7)::weights);
        Path stock = dir.resolve("ternary.gguf"), t2p = dir.resolve("ternary-t2p.gguf");

        CliTest.Result t = run("ternarize", bin.toString(), "--out", stock.toString());
        assertThat(t.code()).as(t.err()).isZero();
        assertThat(t.out()).contains("14 matrices ternarized, 0 in a fallback layout");
        assertThat(typeCounts(stock)).containsEntry(DType.PQ2_0, 14);
        CliTest.Result p = run("repack", stock.toString(), "--type", "t2p", "--out", t2p.toString());
        assertThat(p.code()).as(p.err()).isZero();
        assertThat(typeCounts(t2p)).containsEntry(DType.T2P, 14).doesNotContainKey(DType.PQ2_0);

        Path text = dir.resolve("story.txt");
        Files.writeString(text, DemoCommand.demoText(), StandardCharsets.UTF_8);
        assertSameModel(stock, t2p, text);
    }

    @Test
    void tinystoriesTernaryTq2AndF32MatchTheirT2pRepack(@TempDir Path dir) throws Exception {
        Path tq2 = SharedFiles.model("tinystories-6M-ternary/tinystories-6M-ternary-TQ2_0.gguf");
        Path f32 = SharedFiles.model("tinystories-6M-ternary/tinystories-6M-ternary-f32.gguf");
        Path t2p = dir.resolve("t2p.gguf");
        CliTest.Result r = run("repack", tq2.toString(), "--type", "t2p", "--out", t2p.toString());
        assertThat(r.code()).as(r.err()).isZero();
        assertThat(r.out()).contains("42 tensors as T2P, 0 kept their layout");
        Path text = shortText(dir);
        assertSameModel(tq2, t2p, text);
        // the exact float file, detected ternary at load, is the same model
        assertThat(perplexity(f32.toString(), text)).isEqualTo(perplexity(tq2.toString(), text));
        assertThat(greedyIds(f32.toString())).isEqualTo(greedyIds(tq2.toString()));
        Path fromF32 = dir.resolve("from-f32.gguf");
        assertThat(run("repack", f32.toString(), "--type", "t2p", "--out", fromF32.toString()).code()).isZero();
        assertThat(Files.readAllBytes(fromF32)).isNotEmpty();
        assertThat(perplexity(fromF32.toString(), text)).isEqualTo(perplexity(t2p.toString(), text));
        // `pack --type t2p` is the same repack
        Path packed = dir.resolve("packed-t2p.gguf");
        assertThat(run("pack", tq2.toString(), "--type", "t2p", "--out", packed.toString()).code()).isZero();
        assertThat(Files.mismatch(packed, t2p)).isEqualTo(-1L);
        assertThat(run("pack", tq2.toString(), "--type", "t2p", "--plan", "plan.json", "--out", dir.resolve("x.gguf").toString()).code()).isEqualTo(2);
    }

    @Test
    void stories260kShapesFitNoBlockLayoutAndAreReported(@TempDir Path dir) throws Exception {
        Path stock = dir.resolve("s.gguf"), t2p = dir.resolve("s-t2p.gguf");
        CliTest.Result t = run("ternarize", SharedFiles.model("stories260K-f32.gguf").toString(), "--out", stock.toString());
        assertThat(t.code()).as(t.err()).isZero();
        assertThat(t.out()).contains("35 matrices ternarized, 35 in a fallback layout", "cols 64 not a multiple of 128", "cols 172 not a multiple of 128");
        // a repack that would store nothing as T2P is refused, and writes nothing (it once wrote a copy, "0 tensors as T2P, 35 kept their layout")
        CliTest.Result p = run("repack", stock.toString(), "--type", "t2p", "--out", t2p.toString());
        assertThat(p.code()).isEqualTo(1);
        assertThat(p.err().strip()).isEqualTo("jquant: " + stock + ": nothing to repack: no block matrix can be stored as T2P "
                + "(blk.0.attn_q.weight: cols 64 not a multiple of 128: no ternary block layout fits, kept F32, and 34 more)");
        assertThat(t2p).doesNotExist();
        // and the matrices really are ternary floats now, one scale per tensor
        try (GgufFile f = GgufFile.open(stock)) {
            float[] w = f.tensors().get("blk.0.ffn_down.weight").toFloats();
            float s = 0f;
            for (float v : w) s = Math.max(s, Math.abs(v));
            for (float v : w) assertThat(v).isIn(-s, 0f, s);
        }
    }

    @Test
    void everySourceMetadataKeySurvivesARepack(@TempDir Path dir) throws Exception {
        Path tq2 = SharedFiles.model("tinystories-6M-ternary/tinystories-6M-ternary-TQ2_0.gguf");
        Path withKey = dir.resolve("hadamard.gguf"), out = dir.resolve("out.gguf");
        SequencedMap<String, GgufValue> source;
        try (GgufFile f = GgufFile.open(tq2)) {
            source = new LinkedHashMap<>(f.metadata());
            source.put("prism.hadamard.size", GgufValue.uint32(64));
            source.put("prism.hadamard.layers", GgufValue.stringArray(java.util.List.of("attn_q", "ffn_down")));
            GgufWriter.write(withKey, source, f.tensors().values());
        }
        for (String format : new String[]{"t2p", "pq2_0", "ptq1_0"}) {
            CliTest.Result r = run("repack", withKey.toString(), "--type", format, "--out", out.toString());
            assertThat(r.code()).as(r.err()).isZero();
            try (GgufFile f = GgufFile.open(out)) {
                for (var e : source.entrySet()) {
                    // the file type describes this write: 1024 (LLAMA_FTYPE_GUESSED) for layouts llama.cpp has no type for
                    if (e.getKey().equals("general.file_type")) continue;
                    assertThat(f.metadata()).as(format).containsEntry(e.getKey(), e.getValue());
                }
                assertThat(f.metadata().get("general.file_type")).isEqualTo(GgufValue.uint32(1024));
                assertThat(f.metadata().get("jquant.ternary.layout").asString()).isEqualTo(format);
                assertThat(f.metadata().get("jquant.ternary.repacked").asArray().elements()).hasSize(42);
            }
        }
    }

    @Test
    void ternarizeOfATernaryModelIsItsRepackByteForByte(@TempDir Path dir) throws Exception {
        for (String source : List.of("tinystories-6M-ternary/tinystories-6M-ternary-TQ2_0.gguf", "tinystories-6M-ternary/tinystories-6M-ternary-hf")) {
            Path ternarized = dir.resolve("t.gguf"), repacked = dir.resolve("r.gguf");
            CliTest.Result t = run("ternarize", SharedFiles.model(source).toString(), "--type", "tq2_0", "--out", ternarized.toString());
            assertThat(t.code()).as(t.err()).isZero();
            assertThat(t.out()).contains("already ternary, so the model was repacked losslessly");
            assertThat(run("repack", SharedFiles.model(source).toString(), "--type", "tq2_0", "--out", repacked.toString()).code()).isZero();
            assertThat(Files.readAllBytes(ternarized)).as(source).isEqualTo(Files.readAllBytes(repacked));
        }
        // ternarizing the TQ2_0 file changes none of its tensors (the absmean rescale that took perplexity 5.23 -> 13.80 is gone)
        Path again = dir.resolve("again.gguf");
        assertThat(run("ternarize", SharedFiles.model("tinystories-6M-ternary/tinystories-6M-ternary-TQ2_0.gguf").toString(), "--type", "tq2_0",
                "--out", again.toString()).code()).isZero();
        try (GgufFile source = GgufFile.open(SharedFiles.model("tinystories-6M-ternary/tinystories-6M-ternary-TQ2_0.gguf"));
             GgufFile out = GgufFile.open(again)) {
            assertThat(out.metadata().get("general.file_type").asLong()).isEqualTo(37);
            source.tensors().forEach((name, t) -> assertThat(out.tensors().get(name).data().toArray(java.lang.foreign.ValueLayout.JAVA_BYTE))
                    .as(name).isEqualTo(t.data().toArray(java.lang.foreign.ValueLayout.JAVA_BYTE)));
        }
    }

    @Test
    void nonTernaryInputIsRefusedWithTheValueNamed(@TempDir Path dir) {
        Path out = dir.resolve("out.gguf");
        CliTest.Result r = run("repack", SharedFiles.model("tinystories-6M/tinystories-6M-f32.gguf").toString(), "--type", "t2p", "--out", out.toString());
        assertThat(r.code()).isEqualTo(1);
        assertThat(r.err()).containsPattern("jquant: \\S+/tinystories-6M-f32\\.gguf: blk\\.0\\.\\w+\\.weight: weight at row \\d+ col \\d+ is -?\\d\\.\\d+.*not one of \\{-s, 0, \\+s\\}")
                .contains("jquant ternarize makes one from float weights");
        assertThat(Files.exists(out)).isFalse();
        CliTest.Result bad = run("repack", SharedFiles.model("tinystories-6M-ternary/tinystories-6M-ternary-TQ2_0.gguf").toString(), "--type", "q4_0", "--out", out.toString());
        assertThat(bad.code()).isEqualTo(2);
        assertThat(bad.err()).contains("unknown ternary type 'q4_0'");
    }
}
