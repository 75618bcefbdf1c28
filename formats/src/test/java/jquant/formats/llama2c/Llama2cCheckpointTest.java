package jquant.formats.llama2c;

import jquant.formats.Checkpoint;
import jquant.formats.CheckpointException;
import jquant.formats.Checkpoints;
import jquant.formats.ModelConfig;
import jquant.formats.TensorKind;
import jquant.formats.Vocabulary;
import jquant.testsupport.SharedFiles;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class Llama2cCheckpointTest {

    @Test
    void readsStories260kLegacyWithItsTokenizer() throws IOException {
        try (Checkpoint c = Checkpoints.open(SharedFiles.model("stories260K.bin"))) {
            assertThat(c.format()).isEqualTo("llama2c");
            assertThat(c.config()).isEqualTo(new ModelConfig(64, 172, 5, 8, 4, 512, 512, 10000f, 1e-5f, true));
            assertThat(c.tensor(TensorKind.WK, 4).shape()).containsExactly(32, 64);
            assertThat(c.tensor(TensorKind.W_DOWN, 0).shape()).containsExactly(64, 172);
            assertThat(c.tensor(TensorKind.HEAD, 0)).isSameAs(c.tensor(TensorKind.EMBEDDING, 0));
            Vocabulary v = c.vocabulary().orElseThrow();
            assertThat(v.size()).isEqualTo(512);
            assertThat(v.pieces().subList(0, 4)).containsExactly("<unk>", "<s>", "</s>", "<0x00>");
            // Golden prompt ids 403 407 261 378 spell "Once upon a time" in SentencePiece pieces.
            assertThat(v.pieces().get(403) + v.pieces().get(407) + v.pieces().get(261) + v.pieces().get(378))
                    .isEqualTo("▁Once▁upon▁a▁time");
        }
    }

    @Test
    void version1ExportHoldsTheSameFloats() throws IOException {
        try (Checkpoint legacy = Checkpoints.open(SharedFiles.model("stories260K.bin"));
             Checkpoint v1 = Checkpoints.open(SharedFiles.model("stories260K-v1.bin"), SharedFiles.model("tok512.bin"))) {
            assertThat(v1.format()).isEqualTo("llama2c-v1");
            assertThat(v1.config()).isEqualTo(legacy.config());
            for (TensorKind kind : TensorKind.values()) {
                if (!kind.presentIn(legacy.config())) continue;
                int layers = kind.perLayer() ? legacy.config().layers() : 1;
                for (int l = 0; l < layers; l++) {
                    assertThat(Arrays.equals(v1.tensor(kind, l).toFloats(), legacy.tensor(kind, l).toFloats()))
                            .as(kind.canonicalName(l)).isTrue();
                }
            }
        }
    }

    @Test
    void untiedClassifierFromNegativeVocab() throws IOException {
        try (Checkpoint c = Checkpoints.open(SharedFiles.model("tinystories-6M/tinystories-6M.bin"), SharedFiles.model("tok512.bin"))) {
            assertThat(c.config().tiedEmbeddings()).isFalse();
            assertThat(c.config().vocabSize()).isEqualTo(512);
            assertThat(c.tensor(TensorKind.HEAD, 0).name()).isEqualTo("wcls");
            assertThat(c.tensor(TensorKind.HEAD, 0).toFloats()).isNotEqualTo(c.tensor(TensorKind.EMBEDDING, 0).toFloats());
        }
    }

    @Test
    void truncatedFileIsRefusedWithItsSize(@TempDir Path dir) throws IOException {
        byte[] all = Files.readAllBytes(SharedFiles.model("stories260K.bin"));
        Path cut = dir.resolve("cut.bin");
        Files.write(cut, Arrays.copyOf(all, all.length - 100));
        assertThatThrownBy(() -> Llama2cCheckpoint.open(cut)).isInstanceOf(CheckpointException.class)
                .hasMessageContaining("cut.bin").hasMessageContaining("truncated");
        Path longer = dir.resolve("longer.bin");
        Files.write(longer, Arrays.copyOf(all, all.length + 8));
        assertThatThrownBy(() -> Llama2cCheckpoint.open(longer)).hasMessageContaining("trailing data");
    }

    @Test
    void absurdHeaderFailsFastWithoutAllocating(@TempDir Path dir) throws IOException {
        ByteBuffer b = ByteBuffer.allocate(28).order(ByteOrder.LITTLE_ENDIAN);
        for (int v : new int[]{1 << 20, 1 << 20, 1 << 20, 1, 1, 1 << 20, 1 << 20}) b.putInt(v);
        Path f = dir.resolve("huge.bin");
        Files.write(f, b.array());
        assertThatThrownBy(() -> Llama2cCheckpoint.open(f)).isInstanceOf(CheckpointException.class).hasMessageContaining("truncated");
        b.clear();
        for (int v : new int[]{64, 172, 5, 7, 4, 512, 512}) b.putInt(v);
        Files.write(f, b.array());
        assertThatThrownBy(() -> Llama2cCheckpoint.open(f)).hasMessageContaining("inconsistent header");
    }

    @Test
    void tokenizerWithWrongVocabularySizeIsRefused(@TempDir Path dir) throws IOException {
        byte[] tok = Files.readAllBytes(SharedFiles.model("tok512.bin"));
        Path model = dir.resolve("model.bin");
        Files.copy(SharedFiles.model("stories260K.bin"), model);
        // Keep the header and the first 100 tokens only.
        ByteBuffer in = ByteBuffer.wrap(tok).order(ByteOrder.LITTLE_ENDIAN);
        int pos = 4;
        for (int i = 0; i < 100; i++) pos += 8 + in.getInt(pos + 4);
        Files.write(dir.resolve("tokenizer.bin"), Arrays.copyOf(tok, pos));
        assertThatThrownBy(() -> Llama2cCheckpoint.open(model)).isInstanceOf(CheckpointException.class)
                .hasMessageContaining("tokenizer has 100 tokens but the model's vocabulary is 512");
    }
}
