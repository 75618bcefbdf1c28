package jquant.formats;

import static org.assertj.core.api.Assertions.assertThat;

import jquant.formats.gguf.GgufCheckpoint;
import jquant.formats.safetensors.SafetensorsCheckpoint;
import jquant.testsupport.SharedFiles;
import org.junit.jupiter.api.Test;

/**
 * The same model read from its llama2.c checkpoint, its HF safetensors folder and its F32 GGUF gives
 * bit-identical weights for every canonical tensor, once HF's rotate-half q/k rows are put back into
 * adjacent-pair order.
 */
class CrossReaderTest {

    @Test
    void stories260kAllThreeReadersAgree() throws Exception {
        compare("stories260K-hf", "stories260K-f32.gguf");
        compare("stories260K-hf", "stories260K.bin");
    }

    @Test
    void tinystories6mAllThreeReadersAgree() throws Exception {
        compare("tinystories-6M/tinystories-6M-hf", "tinystories-6M/tinystories-6M-f32.gguf");
        compare("tinystories-6M/tinystories-6M-hf", "tinystories-6M/tinystories-6M.bin");
    }

    /** {@code other} is a GGUF or llama2.c file: both rotate adjacent pairs. */
    private static void compare(String hfFolder, String other) throws Exception {
        try (Checkpoint hf = SafetensorsCheckpoint.open(SharedFiles.model(hfFolder));
             Checkpoint gg = Checkpoints.open(SharedFiles.model(other), other.endsWith(".bin") ? SharedFiles.model("tok512.bin") : null)) {
            ModelConfig c = hf.config();
            assertThat(gg.config().dim()).isEqualTo(c.dim());
            assertThat(gg.config().layers()).isEqualTo(c.layers());
            assertThat(hf.rope()).isEqualTo(RopeConvention.ROTATE_HALF);
            assertThat(gg.rope()).isEqualTo(RopeConvention.ADJACENT_PAIRS);
            int compared = 0;
            for (TensorKind kind : TensorKind.values()) {
                if (!kind.presentIn(c)) continue;
                for (int layer = 0; layer < (kind.perLayer() ? c.layers() : 1); layer++) {
                    Tensor a = hf.tensor(kind, layer);
                    Tensor b = gg.tensor(kind, layer);
                    assertThat(a.shape()).as(kind.canonicalName(layer)).isEqualTo(b.shape());
                    float[] fromHf = a.toFloats();
                    if (kind == TensorKind.WQ) fromHf = RopeConvention.toAdjacentPairs(fromHf, c.heads(), c.headDim(), a.cols());
                    if (kind == TensorKind.WK) fromHf = RopeConvention.toAdjacentPairs(fromHf, c.kvHeads(), c.headDim(), a.cols());
                    float[] fromGguf = b.toFloats();
                    for (int i = 0; i < fromHf.length; i++) {
                        if (Float.floatToRawIntBits(fromHf[i]) != Float.floatToRawIntBits(fromGguf[i])) {
                            throw new AssertionError(kind.canonicalName(layer) + "[" + i + "]: safetensors " + fromHf[i] + ", " + gg.format() + " " + fromGguf[i]);
                        }
                    }
                    compared++;
                }
            }
            // Every kind in every layer; a tied llama2.c model answers HEAD with its embedding.
            assertThat(compared).isEqualTo(3 + 9 * c.layers());
        }
    }
}
