package jquant.formats.gguf;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.SequencedMap;
import jquant.formats.CheckpointException;
import jquant.formats.DType;
import jquant.formats.ModelConfig;
import jquant.formats.RopeConvention;
import jquant.formats.Tensor;
import jquant.formats.TensorKind;
import jquant.formats.Vocabulary;
import jquant.testsupport.SharedFiles;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** GgufCheckpoint on the real llama.cpp files, and on real files with one thing broken. */
class GgufCheckpointTest {
    @TempDir
    Path dir;

    @Test
    void stories260kConfigTensorsAndVocabulary() throws Exception {
        try (GgufCheckpoint c = GgufCheckpoint.open(SharedFiles.model("stories260K-f32.gguf"))) {
            // README: dim 64, hidden 172, 5 layers, 8/4 heads, vocab 512, ctx 512 (after the fix-up), eps 1e-5, theta 1e4;
            // the converter wrote the tied classifier as a separate `output` tensor, so the file is not tied.
            assertThat(c.config()).isEqualTo(new ModelConfig(64, 172, 5, 8, 4, 512, 512, 10000f, 1e-5f, false));
            assertThat(c.format()).isEqualTo("gguf");
            assertThat(c.rope()).isEqualTo(RopeConvention.ADJACENT_PAIRS);
            assertThat(c.file().version()).isEqualTo(3);
            assertThat(c.tensors()).hasSize(48);
            assertThat(c.tensor(TensorKind.WK, 4).shape()).containsExactly(32, 64);
            assertThat(c.tensor(TensorKind.W_DOWN, 0).shape()).containsExactly(64, 172);
            assertThat(c.tensor(TensorKind.EMBEDDING, 0).dtype()).isEqualTo(DType.F32);
            assertThat(c.sourceName(TensorKind.W_UP, 2)).contains("blk.2.ffn_up.weight");
            Vocabulary v = c.vocabulary().orElseThrow();
            assertThat(v.kind()).isEqualTo(Vocabulary.Kind.SENTENCEPIECE);
            assertThat(v.size()).isEqualTo(512);
            assertThat(v.bos()).isEqualTo(1);
            assertThat(v.eos()).isEqualTo(2);
            assertThat(v.pieces().subList(0, 3)).containsExactly("<unk>", "<s>", "</s>");
            assertThat(c.metadata()).containsEntry("general.architecture", "llama").containsEntry("llama.context_length", 512L);
        }
    }

    @Test
    void tinystories6mIsUntiedWithItsOwnHead() throws Exception {
        try (GgufCheckpoint c = GgufCheckpoint.open(SharedFiles.model("tinystories-6M/tinystories-6M-Q8_0.gguf"))) {
            assertThat(c.config()).isEqualTo(new ModelConfig(256, 768, 6, 8, 4, 512, 256, 10000f, 1e-5f, false));
            assertThat(c.tensor(TensorKind.HEAD, 0).name()).isEqualTo("output.weight");
            assertThat(c.tensor(TensorKind.WQ, 5).dtype()).isEqualTo(DType.Q8_0);
        }
    }

    @Test
    void aRealFileWithATypeJquantCannotDecodeOpensAndFailsOnlyOnThatTensorsValues() throws Exception {
        // blk.0.attn_q.weight (64 × 64) re-stored as IQ4_NL, a ggml type jquant knows only by size: 18 bytes per 32 weights.
        Path path = edited((meta, tensors) -> tensors.replaceAll(t -> !t.name().equals("blk.0.attn_q.weight") ? t
                : new Tensor(t.name(), t.shape(), DType.IQ4_NL, java.lang.foreign.MemorySegment.ofArray(new byte[64 * 2 * 18]))));
        try (GgufCheckpoint c = GgufCheckpoint.open(path);
             GgufCheckpoint original = GgufCheckpoint.open(SharedFiles.model("stories260K-f32.gguf"))) {
            assertThat(c.config()).isEqualTo(original.config());
            Tensor q = c.tensor(TensorKind.WQ, 0);
            assertThat(q.dtype()).isEqualTo(DType.IQ4_NL);
            assertThat(q.byteSize()).isEqualTo(64 * 2 * 18);
            assertThat(c.tensor(TensorKind.WK, 0).toFloats()).containsExactly(original.tensor(TensorKind.WK, 0).toFloats());
            assertThatThrownBy(q::toFloats).isInstanceOf(UnsupportedOperationException.class)
                    .hasMessageContainingAll("tensor blk.0.attn_q.weight", "IQ4_NL", "id 20");
        }
    }

    /** Rewrites the real stories260K file with {@code edit} applied to its metadata and tensor list. */
    private Path edited(java.util.function.BiConsumer<SequencedMap<String, GgufValue>, List<Tensor>> edit) throws Exception {
        Path out = dir.resolve("edited.gguf");
        try (GgufFile f = GgufFile.open(SharedFiles.model("stories260K-f32.gguf"))) {
            SequencedMap<String, GgufValue> meta = new LinkedHashMap<>(f.metadata());
            List<Tensor> tensors = new ArrayList<>(f.tensors().values());
            edit.accept(meta, tensors);
            GgufWriter.write(out, meta, tensors);
        }
        return out;
    }

    @Test
    void withoutOutputTensorTheModelIsTied() throws Exception {
        Path p = edited((m, t) -> t.removeIf(x -> x.name().equals("output.weight")));
        try (GgufCheckpoint c = GgufCheckpoint.open(p)) {
            assertThat(c.config().tiedEmbeddings()).isTrue();
            assertThat(c.tensor(TensorKind.HEAD, 0).name()).isEqualTo("token_embd.weight");
        }
    }

    @Test
    void refusesMissingLayerTensorMissingKeyAndOtherArchitectures() throws Exception {
        Path noTensor = edited((m, t) -> t.removeIf(x -> x.name().equals("blk.3.ffn_gate.weight")));
        assertThatThrownBy(() -> GgufCheckpoint.open(noTensor)).isInstanceOf(CheckpointException.class).hasMessageContaining("missing tensor blk.3.ffn_gate");
        Path noKey = edited((m, t) -> m.remove("llama.block_count"));
        assertThatThrownBy(() -> GgufCheckpoint.open(noKey)).isInstanceOf(CheckpointException.class).hasMessageContaining("missing metadata key llama.block_count");
        Path gpt = edited((m, t) -> m.put("general.architecture", GgufValue.string("gpt2")));
        assertThatThrownBy(() -> GgufCheckpoint.open(gpt)).isInstanceOf(CheckpointException.class).hasMessageContaining("architecture 'gpt2'");
        Path wrongShape = edited((m, t) -> m.put("llama.feed_forward_length", GgufValue.uint32(128)));
        assertThatThrownBy(() -> GgufCheckpoint.open(wrongShape)).isInstanceOf(CheckpointException.class).hasMessageContaining("ffn_gate.weight has shape [172, 64]");
    }

    @Test
    void writerRoundTripsRealFilesByteForByte() throws Exception {
        for (String name : List.of("stories260K-f32.gguf", "tinystories-6M-ternary/tinystories-6M-ternary-TQ2_0.gguf", "stories260K-Q4_0.gguf")) {
            Path original = SharedFiles.model(name);
            Path copy = dir.resolve("copy.gguf");
            try (GgufFile f = GgufFile.open(original)) {
                GgufWriter.write(copy, f.metadata(), f.tensors().values());
                try (GgufFile back = GgufFile.open(copy)) {
                    assertThat(List.copyOf(back.metadata().entrySet())).as(name).isEqualTo(List.copyOf(f.metadata().entrySet()));
                    assertThat(back.tensorInfos()).hasSameSizeAs(f.tensorInfos());
                    for (int i = 0; i < f.tensorInfos().size(); i++) {
                        GgufTensorInfo a = f.tensorInfos().get(i);
                        GgufTensorInfo b = back.tensorInfos().get(i);
                        assertThat(b.name()).isEqualTo(a.name());
                        assertThat(b.dims()).isEqualTo(a.dims());
                        assertThat(b.type()).isEqualTo(a.type());
                        assertThat(b.offset()).isEqualTo(a.offset());
                        assertThat(back.tensors().get(b.name()).data().mismatch(f.tensors().get(a.name()).data())).as(a.name()).isEqualTo(-1L);
                    }
                }
            }
            assertThat(Files.mismatch(original, copy)).as("%s rewritten byte for byte", name).isEqualTo(-1L);
        }
    }
}
