package jquant.pack.model;

import jquant.core.ProgressListener;
import jquant.formats.jqw.QuantizationMetadata;
import jquant.formats.jqw.TensorEncoding;
import jquant.formats.Checkpoint;
import jquant.formats.CheckpointException;
import jquant.formats.Checkpoints;
import jquant.formats.ModelConfig;
import jquant.formats.TensorKind;
import jquant.formats.Vocabulary;
import jquant.formats.jqw.JqwFile;
import jquant.formats.jqw.JqwLayer;
import jquant.formats.jqw.JqwTensor;
import jquant.formats.llama2c.Llama2cWriter;
import jquant.formats.synthetic.SyntheticLlama;
import jquant.formats.weightlet.VectorWeightletUnpacker;
import jquant.formats.weightlet.WeightletLayout;
import jquant.quantize.BitPlan;
import jquant.quantize.SymmetricChannelQuantizer;
import jquant.quantize.TensorPlan;
import jquant.testsupport.Slow;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.IntStream;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

@Slow
class ModelPackerTest {
    private static final ProgressListener QUIET = (done, total, name) -> {};

    private static ModelPacker.Options options(BitPlan plan) {
        return new ModelPacker.Options(plan, ModelPacker.KEEPABLE, null);
    }

    @Test
    void everyKeepTypeVerifiesAndStoresTheKeptTensorsAsSaid(@TempDir Path dir) throws Exception {
        try (Checkpoint c = TestModels.stories260K()) {
            BitPlan plan = TestModels.plan(c, 5);
            for (ModelPacker.KeepType type : ModelPacker.KeepType.values()) {
                Path f = dir.resolve(type + ".jqw");
                ModelPacker.pack(c, new ModelPacker.Options(plan, ModelPacker.KEEPABLE, type, null), f, QUIET);
                assertThat(PackedModelVerifier.verify(f, c, null, QUIET).problems()).as(type.name()).isEmpty();
                try (JqwFile j = JqwFile.open(f)) {
                    JqwTensor embedding = j.tensors().get("token_embd");
                    assertThat(embedding.encoding()).isEqualTo(switch (type) {
                        case f32 -> TensorEncoding.F32;
                        case f16 -> TensorEncoding.F16;
                        case q8 -> TensorEncoding.WEIGHTLET;
                        case auto -> TensorEncoding.WEIGHTLET;   // 64-wide rows: a q8 row is 64 bytes and a scale, f16's 128
                    });
                    if (type == ModelPacker.KeepType.q8 || type == ModelPacker.KeepType.auto) {
                        assertThat(embedding.attrs()).containsEntry(TensorEncoding.KEPT, "q8");
                        assertThat(TensorEncoding.readWeightlet(j, embedding).packed().bits()).containsOnly(8);
                    }
                    assertThat(QuantizationMetadata.of(j).keepTypeLabel()).isEqualTo(type.name());
                }
            }
        }
    }

    @Test
    void autoKeepsAsQ8WhereThatIsSmallerThanF16() {
        assertThat(ModelPacker.KeepType.auto.of(512, 64)).isEqualTo(ModelPacker.KeepType.q8);      // stories260K: 68 bytes a row against 128
        assertThat(ModelPacker.KeepType.auto.of(512, 1)).isEqualTo(ModelPacker.KeepType.f16);      // 16 + 4 against 2
        assertThat(ModelPacker.KeepType.auto.of(512, 256)).isEqualTo(ModelPacker.KeepType.q8);     // tinystories-6M: 260 against 512
        assertThat(ModelPacker.KeepType.auto.of(128_256, 4096)).isEqualTo(ModelPacker.KeepType.q8); // Llama 3 8B
        assertThat(ModelPacker.KeepType.auto.of(512, 172)).isEqualTo(ModelPacker.KeepType.q8);     // 128 + 64 + 4 against 344
        assertThat(ModelPacker.KeepType.f16.of(512, 4096)).isEqualTo(ModelPacker.KeepType.f16);
    }

    @Test
    void packedStories260KVerifiesHoldsThePlansCodesAndIsDeterministic(@TempDir Path dir) throws IOException {
        try (Checkpoint c = TestModels.stories260K()) {
            BitPlan plan = TestModels.plan(c, 4);
            Path a = dir.resolve("a.jqw"), b = dir.resolve("b.jqw");
            ModelPacker.pack(c, options(plan), a, QUIET);
            ModelPacker.pack(c, options(plan), b, QUIET);
            assertThat(Files.readAllBytes(b)).isEqualTo(Files.readAllBytes(a));

            PackedModelVerifier.Report report = PackedModelVerifier.verify(a, c, null, QUIET);
            assertThat(report.problems()).isEmpty();
            assertThat(report.tensorsChecked()).isEqualTo(1 + 9 * c.config().layers() + 1);

            try (JqwFile f = JqwFile.open(a)) {
                assertThat(f.layers()).extracting(JqwLayer::name).containsExactly(
                        "embedding", "layer.0", "layer.1", "layer.2", "layer.3", "layer.4", "head");
                assertThat(f.tensors().get("token_embd").encoding()).isEqualTo(TensorEncoding.WEIGHTLET);   // kept, auto: q8 at 64 wide
                // every channel unpacks to the quantizer's codes for its planned width, with its scale
                JqwTensor up = f.tensors().get("blk.2.ffn_up");
                TensorEncoding.Weightlet w = TensorEncoding.readWeightlet(f, up);
                TensorPlan p = plan.tensor("blk.2.ffn_up");
                assertThat(w.packed().bits()).containsExactly(IntStream.range(0, p.rows()).map(p::bits).toArray());
                var source = c.tensor(TensorKind.W_UP, 2);
                var q = SymmetricChannelQuantizer.quantize(source.toFloats(), source.rows(), source.cols(), p.bits());
                assertThat(VectorWeightletUnpacker.INSTANCE.unpackTensor(w.packed())).containsExactly(q.values());
                assertThat(w.scales()).containsExactly(q.scales());
            }
        }
    }

    @Test
    void aFlippedDataByteIsNamedByVerifyAndFailsLoading(@TempDir Path dir) throws IOException {
        try (Checkpoint c = TestModels.stories260K()) {
            BitPlan plan = TestModels.plan(c, 3);
            Path f = dir.resolve("m.jqw");
            ModelPacker.pack(c, options(plan), f, QUIET);
            long dataStart;
            try (JqwFile j = JqwFile.open(f)) {
                dataStart = j.tensors().get("blk.1.ffn_up").part(TensorEncoding.DATA)[0];
            }
            // channel 17's first byte: the widths of channels 0..16 decide where it starts
            TensorPlan p = plan.tensor("blk.1.ffn_up");
            long offset = 0;
            for (int ch = 0; ch < 17; ch++) offset += WeightletLayout.channelBytes(p.bits(ch), p.cols());
            flip(f, dataStart + offset);

            assertThatThrownBy(() -> JqwFile.open(f)).isInstanceOf(CheckpointException.class)
                    .hasMessageContaining("checksum mismatch in layer layer.1");
            PackedModelVerifier.Report report = PackedModelVerifier.verify(f, c, null, QUIET);
            assertThat(report.ok()).isFalse();
            assertThat(report.problems().getFirst())
                    .isEqualTo("blk.1.ffn_up: part data differs at byte " + offset + " (channel 17)");
            assertThat(report.problems()).contains("layer layer.1: checksum mismatch");
        }
    }

    @Test
    void aFailedPackLeavesNoFile(@TempDir Path dir) throws IOException {
        try (Checkpoint c = TestModels.stories260K()) {
            BitPlan plan = TestModels.plan(c, 4);
            Path out = dir.resolve("m.jqw");
            // --keep none needs the plan to cover token_embd
            assertThatThrownBy(() -> ModelPacker.pack(c, new ModelPacker.Options(plan, Set.of(), null), out, QUIET))
                    .hasMessageContaining("the plan has no entry for token_embd");
            // a failure after some layers were written
            ProgressListener failing = (done, total, name) -> {
                if (done == 5) throw new IllegalStateException("interrupted");
            };
            assertThatThrownBy(() -> ModelPacker.pack(c, options(plan), out, failing)).hasMessage("interrupted");
            try (var files = Files.list(dir)) {
                assertThat(files.toList()).isEmpty();
            }
        }
    }

    @Test
    void keepNonePacksTheTiedEmbeddingAsTheClassifier(@TempDir Path dir) throws IOException {
        try (Checkpoint c = TestModels.stories260K()) {
            assertThat(c.config().tiedEmbeddings()).isTrue();
            BitPlan plan = TestModels.plan(c, 6, TensorKind.EMBEDDING);
            Path f = dir.resolve("m.jqw");
            ModelPacker.pack(c, new ModelPacker.Options(plan, Set.of(), null), f, QUIET);
            try (JqwFile j = JqwFile.open(f)) {
                assertThat(j.tensors().get("token_embd").encoding()).isEqualTo(TensorEncoding.WEIGHTLET);
                assertThat(j.tensors().get("blk.0.attn_q").attrs()).isEmpty();
                assertThat(j.tensors()).doesNotContainKey("output");
                assertThat(j.metadata().path("quantization").path("smoothing").isNull()).isTrue();
            }
            assertThat(PackedModelVerifier.verify(f, c, null, QUIET).problems()).isEmpty();
        }
    }

    /** Output factors 1, 1.5, 2 by row and a distinct input scale per layer, so the test sees where each one lands. */
    private static SmoothedSource fixedSmoothing(Checkpoint c, String statsSha256) {
        return new FakeSmoothing(c, r -> 1 + (r % 3) * 0.5f, (kind, layer) -> 0.01f * (layer + 1) + kind.ordinal() * 1e-4f, 1 / 127f, 0.5f,
                new LinkedHashMap<>(Map.of("output", 0.5f)), "fingerprint", statsSha256);
    }

    private static BitPlan withAlpha(BitPlan plan, Double alpha) {
        return new BitPlan(plan.budget(), plan.tensors().stream().map(t -> t.withAlpha(alpha)).toList());
    }

    @Test
    void smoothedPackFoldsOutputFactorsRecordsStaticScalesAndVerifiesOnlyWithTheSameStats(@TempDir Path dir) throws IOException {
        try (Checkpoint c = TestModels.stories260K()) {
            BitPlan raw = TestModels.plan(c, 5, TensorKind.HEAD), plan = withAlpha(raw, 0.5);
            SmoothedSource smoothing = fixedSmoothing(c, "a".repeat(64));
            Set<TensorKind> keepEmbedding = Set.of(TensorKind.EMBEDDING);
            Path f = dir.resolve("m.jqw");
            ModelPacker.pack(c, new ModelPacker.Options(plan, keepEmbedding, smoothing), f, QUIET);
            try (JqwFile j = JqwFile.open(f)) {
                // the smoothed classifier is no longer the embedding: the file is untied and has its own output
                assertThat(j.metadata().path("model").path("tiedEmbeddings").asBoolean()).isFalse();
                assertThat(j.tensors().get("output").encoding()).isEqualTo(TensorEncoding.WEIGHTLET);
                assertThat(j.tensors().get("token_embd").encoding()).isEqualTo(TensorEncoding.WEIGHTLET);   // kept, auto: q8
                JqwTensor up = j.tensors().get("blk.1.ffn_up");
                var t = c.tensor(TensorKind.W_UP, 1);
                float[] plain = SymmetricChannelQuantizer.quantize(t.toFloats(), t.rows(), t.cols(), plan.tensor("blk.1.ffn_up").bits()).scales();
                float[] factor = smoothing.outputFactor(TensorKind.W_UP, 1), stored = TensorEncoding.readWeightlet(j, up).scales();
                for (int r = 0; r < plain.length; r++) assertThat(stored[r]).isEqualTo(plain[r] * factor[r]);
                assertThat(up.attrs()).containsEntry(TensorEncoding.INPUT_SCALE, (double) smoothing.inputScale(TensorKind.W_UP, 1))
                        .containsEntry(TensorEncoding.OUTPUT_SCALE, (double) (1 / 127f)).containsEntry(TensorEncoding.ALPHA, 0.5);
                var recorded = j.metadata().path("quantization").path("smoothing");
                assertThat(recorded.path("statsSha256").asText()).isEqualTo("a".repeat(64));
                assertThat(recorded.path("alpha").path("output").asDouble()).isEqualTo(0.5);
                assertThat(j.metadata().path("quantization").path("activationScales").asBoolean()).isTrue();
            }
            assertThat(PackedModelVerifier.verify(f, c, smoothing, QUIET).problems()).isEmpty();
            assertThatThrownBy(() -> PackedModelVerifier.verify(f, c, null, QUIET))
                    .hasMessageContaining("was packed with calibration stats").hasMessageContaining("--stats");
            assertThatThrownBy(() -> PackedModelVerifier.verify(f, c, fixedSmoothing(c, "b".repeat(64)), QUIET))
                    .hasMessageContaining("are not those");

            Path g = dir.resolve("g.jqw");
            assertThatThrownBy(() -> ModelPacker.pack(c, new ModelPacker.Options(raw, keepEmbedding, smoothing), g, QUIET))
                    .hasMessageContaining("allocated on the raw weights");
            assertThatThrownBy(() -> ModelPacker.pack(c, new ModelPacker.Options(plan, ModelPacker.KEEPABLE, null), g, QUIET))
                    .hasMessageContaining("allocated on smoothed weights");
            assertThatThrownBy(() -> ModelPacker.pack(c, new ModelPacker.Options(withAlpha(raw, 0.25), keepEmbedding, smoothing), g, QUIET))
                    .hasMessageContaining("allocated with other stats");
            ModelPacker.pack(c, new ModelPacker.Options(raw, ModelPacker.KEEPABLE, null), g, QUIET);
            assertThatThrownBy(() -> PackedModelVerifier.verify(g, c, smoothing, QUIET)).hasMessageContaining("packed without calibration stats");
        }
    }

    /** A 4096×4096-class model: the file is Σ bits/8 of its weights plus under 2% of everything else. */
    @Test
    void fileSizeIsTheWeightBitsPlusLittleMetadata(@TempDir Path dir) throws IOException {
        ModelConfig config = new ModelConfig(4096, 256, 1, 32, 1, 256, 64, 10000f, 1e-5f, false);
        Path model = dir.resolve("big.bin"), tok = dir.resolve("tok.bin");
        SyntheticLlama synthetic = new SyntheticLlama(config, 7);
        Llama2cWriter.writeCheckpoint(model, config, synthetic::weights);
        List<String> pieces = new ArrayList<>(List.of("<unk>", "<s>", "</s>"));
        for (int i = 3; i < 256; i++) pieces.add("t" + i);
        Llama2cWriter.writeTokenizer(tok, new Vocabulary(Vocabulary.Kind.SENTENCEPIECE, pieces, new float[256], List.of(), 1, 2, true));
        try (Checkpoint c = Checkpoints.open(model, tok)) {
            BitPlan plan = TestModels.plan(c, 4, TensorKind.EMBEDDING, TensorKind.HEAD);
            Path f = dir.resolve("big.jqw");
            ModelPacker.pack(c, new ModelPacker.Options(plan, Set.of(), null), f, QUIET);
            long weightBytes = plan.tensors().stream().mapToLong(t -> t.totalChannelBits() * t.cols() / 8).sum();
            long size = Files.size(f);
            assertThat(size).isGreaterThan(weightBytes).isLessThan((long) (weightBytes * 1.02));
            assertThat(PackedModelVerifier.verify(f, c, null, QUIET).problems()).isEmpty();
        }
    }

    static void flip(Path f, long pos) throws IOException {
        try (RandomAccessFile r = new RandomAccessFile(f.toFile(), "rw")) {
            r.seek(pos);
            int b = r.read();
            r.seek(pos);
            r.write(b ^ 0x01);
        }
    }
}
