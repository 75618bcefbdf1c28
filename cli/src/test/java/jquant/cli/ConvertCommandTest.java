package jquant.cli;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import jquant.formats.Checkpoint;
import jquant.formats.Checkpoints;
import jquant.formats.gguf.GgufFile;
import jquant.formats.gguf.GgufTensorInfo;
import jquant.formats.gguf.GgufValue;
import jquant.runtime.LlamaModel;
import jquant.testsupport.SharedFiles;
import jquant.testsupport.Slow;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static jquant.cli.CliTest.run;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@code jquant convert}: stories260K from its three formats gives one GGUF file whose tokenizer and
 * tensors are those of llama.cpp's own stories260K-f32.gguf; every file jquant writes in a standard type
 * reads in Hugging Face's independent GGUF parser ({@code scripts/gguf-check}) with the same tensor
 * table and metadata jquant's reader sees; converted files run with jquant's reader to the same logits.
 */
class ConvertCommandTest {
    private static final Path CHECKER = Path.of(System.getProperty("jquant.root", "..")).resolve("scripts/gguf-check");

    @Test
    void stories260kFromEveryFormatIsLlamaCppsFile(@TempDir Path dir) throws Exception {
        Path reference = SharedFiles.model("stories260K-f32.gguf");
        for (String source : List.of("stories260K.bin", "stories260K-hf", "stories260K-f32.gguf")) {
            Path out = dir.resolve(source + ".gguf");
            CliTest.Result r = run("convert", SharedFiles.model(source).toString(), "--type", "f32", "--out", out.toString());
            assertThat(r.code()).as(r.err()).isZero();
            try (GgufFile ours = GgufFile.open(out); GgufFile theirs = GgufFile.open(reference)) {
                for (String key : List.of("tokenizer.ggml.model", "tokenizer.ggml.tokens", "tokenizer.ggml.scores", "tokenizer.ggml.token_type",
                        "tokenizer.ggml.bos_token_id", "tokenizer.ggml.eos_token_id", "tokenizer.ggml.unknown_token_id", "general.architecture",
                        "llama.embedding_length", "llama.block_count", "llama.attention.head_count", "llama.attention.head_count_kv",
                        "llama.rope.dimension_count")) {
                    assertThat(ours.metadata().get(key)).as(source + " " + key).isEqualTo(theirs.metadata().get(key));
                }
                assertThat(ours.metadata().get("general.file_type")).isEqualTo(GgufValue.uint32(0));
                assertThat(ours.metadata().get("general.quantization_version")).isEqualTo(GgufValue.uint32(2));
                // stories260K is tied: llama.cpp's llama2.c converter stores the embedding a second time as output.weight,
                // convert_hf_to_gguf.py (and jquant, from a non-GGUF source) leave it out and llama.cpp then reads token_embd
                assertThat(theirs.tensors().get("output.weight").data().toArray(ValueLayout.JAVA_BYTE))
                        .isEqualTo(theirs.tensors().get("token_embd.weight").data().toArray(ValueLayout.JAVA_BYTE));
                boolean fromGguf = source.endsWith(".gguf");
                assertThat(ours.tensors().containsKey("output.weight")).isEqualTo(fromGguf);
                theirs.tensors().forEach((name, t) -> {
                    if (name.equals("output.weight") && !fromGguf) return;
                    assertThat(ours.tensors().get(name).data().toArray(ValueLayout.JAVA_BYTE)).as(source + " " + name)
                            .isEqualTo(t.data().toArray(ValueLayout.JAVA_BYTE));
                });
                assertThat(ours.tensors()).hasSize(theirs.tensors().size() - (fromGguf ? 0 : 1));
            }
        }
    }

    @Test
    void q8AndHalfTypesRoundTripThroughJquantsReader(@TempDir Path dir) throws Exception {
        Path source = SharedFiles.model("stories260K-hf");
        float[] expected;
        try (Checkpoint c = Checkpoints.open(source)) {
            expected = LlamaModel.load(c).newSession().forward(new int[] {1, 403, 407, 261, 378}, 0);
        }
        for (String type : List.of("f32", "f16", "bf16", "q8_0")) {
            Path out = dir.resolve(type + ".gguf");
            assertThat(run("convert", source.toString(), "--type", type, "--out", out.toString()).code()).isZero();
            try (Checkpoint c = Checkpoints.open(out)) {
                float[] logits = LlamaModel.load(c).newSession().forward(new int[] {1, 403, 407, 261, 378}, 0);
                double max = 0;
                for (int i = 0; i < logits.length; i++) max = Math.max(max, Math.abs(logits[i] - expected[i]));
                // f32 is the same model exactly; the others within their rounding
                assertThat(max).as(type).isLessThanOrEqualTo(switch (type) { case "f32" -> 1e-5; case "f16" -> 0.02; default -> 0.5; });
            }
            checkWithIndependentReader(out);
        }
        assertThat(run("convert", source.toString(), "--type", "q4_0", "--out", dir.resolve("x.gguf").toString()).code()).isEqualTo(2);
    }

    @Test
    @Slow
    void ternaryFilesJquantWritesReadInTheIndependentParser(@TempDir Path dir) throws Exception {
        Path hf = SharedFiles.model("tinystories-6M-ternary/tinystories-6M-ternary-hf");
        Path tq2 = dir.resolve("tq2.gguf"), t2p = dir.resolve("t2p.gguf");
        assertThat(run("ternarize", hf.toString(), "--type", "tq2_0", "--out", tq2.toString()).code()).isZero();
        checkWithIndependentReader(tq2);
        assertThat(run("repack", tq2.toString(), "--type", "t2p", "--out", t2p.toString()).code()).isZero();
        try (GgufFile f = GgufFile.open(t2p)) {
            assertThat(f.metadata().get("jquant.ternary.third_party_readers").asString()).contains("T2P", "refuse");
            assertThat(f.metadata().get("general.file_type")).isEqualTo(GgufValue.uint32(1024));
        }
    }

    /**
     * Parses {@code file} with {@code scripts/gguf-check/check.mjs} and compares its tensor table (names,
     * dims, ggml type ids, offsets) and metadata keys with jquant's reader.
     */
    static void checkWithIndependentReader(Path file) throws IOException, InterruptedException {
        Assumptions.assumeTrue(Files.isDirectory(CHECKER.resolve("node_modules/@huggingface/gguf")),
                "scripts/gguf-check is not installed (npm ci --prefix scripts/gguf-check; .ci/run does it)");
        Process p = new ProcessBuilder("node", CHECKER.resolve("check.mjs").toString(), file.toString()).redirectErrorStream(true).start();
        String output = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertThat(p.waitFor(60, TimeUnit.SECONDS)).isTrue();
        assertThat(p.exitValue()).as(output).isZero();
        JsonNode parsed = new ObjectMapper().readTree(output);
        try (GgufFile f = GgufFile.open(file)) {
            assertThat(parsed.path("version").asInt()).isEqualTo(f.version());
            assertThat(parsed.path("dataOffset").asLong()).isEqualTo(f.dataOffset());
            JsonNode tensors = parsed.path("tensors");
            assertThat(tensors.size()).isEqualTo(f.tensorInfos().size());
            for (int i = 0; i < tensors.size(); i++) {
                GgufTensorInfo t = f.tensorInfos().get(i);
                JsonNode n = tensors.get(i);
                assertThat(n.path("name").asText()).isEqualTo(t.name());
                assertThat(n.path("type").asInt()).as(t.name()).isEqualTo(t.type().ggmlId());
                assertThat(n.path("offset").asLong()).as(t.name()).isEqualTo(t.offset());
                long[] shape = t.dims();
                for (int d = 0; d < shape.length; d++) assertThat(n.path("dims").get(d).asLong()).isEqualTo(shape[d]);
            }
            for (var e : f.metadata().entrySet()) {
                JsonNode v = parsed.path("metadata").path(e.getKey());
                assertThat(v.isMissingNode()).as(e.getKey()).isFalse();
                if (e.getValue().type() == jquant.formats.gguf.GgufType.ARRAY) {
                    assertThat(v.path("length").asInt()).as(e.getKey()).isEqualTo(e.getValue().asArray().elements().size());
                } else if (e.getValue().type() == jquant.formats.gguf.GgufType.STRING) {
                    assertThat(v.asText()).as(e.getKey()).isEqualTo(e.getValue().asString());
                }
            }
        }
    }
}
