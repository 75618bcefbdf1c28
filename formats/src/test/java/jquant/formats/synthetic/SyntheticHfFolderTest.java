package jquant.formats.synthetic;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import jquant.formats.Checkpoint;
import jquant.formats.Checkpoints;
import jquant.formats.DType;
import jquant.formats.ModelConfig;
import jquant.formats.RopeConvention;
import jquant.formats.TensorKind;
import jquant.testsupport.SharedFiles;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** A generated model written as a Hugging Face folder reads back as the same model through the HF reader. */
class SyntheticHfFolderTest {

    @Test
    void aWrittenFolderReadsBackAsTheSameModel(@TempDir Path dir) throws Exception {
        ModelConfig config = new ModelConfig(64, 160, 2, 4, 2, 512, 128, 10000f, 1e-5f, false);
        Path hf = dir.resolve("hf");
        try (SyntheticCheckpoint source = new SyntheticCheckpoint(dir.resolve("synthetic"), new SyntheticLlama(config, 7), DType.F16, null)) {
            SyntheticHfFolder.write(source, hf);
            Files.copy(SharedFiles.model("tok512.model"), hf.resolve("tokenizer.model"));
            try (Checkpoint read = Checkpoints.open(hf)) {
                assertThat(read.config()).isEqualTo(config);
                assertThat(read.rope()).isEqualTo(RopeConvention.ROTATE_HALF);
                assertThat(read.vocabulary()).isPresent();
                for (int l = 0; l < config.layers(); l++) {
                    for (TensorKind kind : TensorKind.values()) {
                        if (!kind.perLayer() || !kind.presentIn(config)) continue;
                        float[] expected = source.tensor(kind, l).toFloats(), actual = read.tensor(kind, l).toFloats();
                        int heads = kind == TensorKind.WQ ? config.heads() : config.kvHeads();
                        if (kind == TensorKind.WQ || kind == TensorKind.WK) {
                            actual = RopeConvention.toAdjacentPairs(actual, heads, config.headDim(), config.dim());
                        }
                        assertThat(actual).as(kind.canonicalName(l)).containsExactly(expected);
                    }
                }
                for (TensorKind kind : new TensorKind[] {TensorKind.EMBEDDING, TensorKind.FINAL_NORM, TensorKind.HEAD}) {
                    assertThat(read.tensor(kind, 0).toFloats()).as(kind.name()).containsExactly(source.tensor(kind, 0).toFloats());
                }
            }
        }
    }
}
