package jquant.formats.safetensors;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.node.ObjectNode;
import jquant.testsupport.SharedFiles;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Consumer;
import jquant.formats.CheckpointException;
import jquant.formats.DType;
import jquant.formats.ModelConfig;
import jquant.formats.PreTokenizer;
import jquant.formats.RopeConvention;
import jquant.formats.Tensor;
import jquant.formats.TensorKind;
import jquant.formats.Vocabulary;
import jquant.formats.Vocabulary.TokenType;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class SafetensorsCheckpointTest {
    @TempDir
    Path dir;

    @Test
    void stories260kFolder() throws Exception {
        try (SafetensorsCheckpoint c = SafetensorsCheckpoint.open(SharedFiles.model("stories260K-hf"))) {
            assertThat(c.config()).isEqualTo(new ModelConfig(64, 172, 5, 8, 4, 512, 512, 10000f, 1e-5f, true));
            assertThat(c.rope()).isEqualTo(RopeConvention.ROTATE_HALF);
            assertThat(c.format()).isEqualTo("safetensors");
            assertThat(c.tensors()).hasSize(48);
            assertThat(c.tensor(TensorKind.WK, 0).shape()).containsExactly(32, 64);
            assertThat(c.tensor(TensorKind.HEAD, 0).name()).isEqualTo("lm_head.weight");
            assertThat(c.tensor(TensorKind.HEAD, 0).data().mismatch(c.tensor(TensorKind.EMBEDDING, 0).data())).isEqualTo(-1L);
            assertThat(c.metadata()).containsEntry("__metadata__.format", "pt").containsEntry("model_type", "llama");
            Vocabulary v = c.vocabulary().orElseThrow();
            assertThat(v.size()).isEqualTo(512);
            assertThat(v.addBos()).isTrue();
        }
    }

    @Test
    void openingTheFileDirectlyFindsTheConfigBesideIt() throws Exception {
        try (SafetensorsCheckpoint c = SafetensorsCheckpoint.open(SharedFiles.model("tinystories-6M/tinystories-6M-hf/model.safetensors"))) {
            assertThat(c.config()).isEqualTo(new ModelConfig(256, 768, 6, 8, 4, 512, 256, 10000f, 1e-5f, false));
            assertThat(c.tensors()).hasSize(57);
        }
    }

    @Test
    void shardedCheckpointGivesTheSameTensors() throws Exception {
        SafetensorsWriting.copyOfStories260k(dir, false);
        try (SafetensorsCheckpoint single = SafetensorsCheckpoint.open(SharedFiles.model("stories260K-hf"))) {
            List<Tensor> all = new ArrayList<>(single.tensors().values());
            List<Tensor> first = all.subList(0, 20);
            List<Tensor> second = all.subList(20, all.size());
            SafetensorsWriting.write(dir.resolve("model-00001-of-00002.safetensors"), first);
            SafetensorsWriting.write(dir.resolve("model-00002-of-00002.safetensors"), second);
            ObjectNode index = SafetensorsWriting.JSON.createObjectNode();
            ObjectNode map = index.putObject("weight_map");
            first.forEach(t -> map.put(t.name(), "model-00001-of-00002.safetensors"));
            second.forEach(t -> map.put(t.name(), "model-00002-of-00002.safetensors"));
            Files.writeString(dir.resolve(SafetensorsCheckpoint.INDEX_FILE), index.toString());
            try (SafetensorsCheckpoint sharded = SafetensorsCheckpoint.open(dir)) {
                assertThat(sharded.tensors().keySet()).containsExactlyInAnyOrderElementsOf(single.tensors().keySet());
                for (Tensor t : all) {
                    assertThat(sharded.tensors().get(t.name()).data().mismatch(t.data())).as(t.name()).isEqualTo(-1L);
                }
            }
            map.put(all.get(0).name(), "model-00002-of-00002.safetensors");
            Files.writeString(dir.resolve(SafetensorsCheckpoint.INDEX_FILE), index.toString());
            assertThatThrownBy(() -> SafetensorsCheckpoint.open(dir)).isInstanceOf(CheckpointException.class)
                    .hasMessageContaining("index lists tensor " + all.get(0).name());
        }
    }

    @Test
    void readsEverySupportedDtype() throws Exception {
        Path f = dir.resolve("types.safetensors");
        String header = """
                {"f16":{"dtype":"F16","shape":[2],"data_offsets":[0,4]},
                 "bf16":{"dtype":"BF16","shape":[2],"data_offsets":[4,8]},
                 "i8":{"dtype":"I8","shape":[1,2],"data_offsets":[8,10]},
                 "u8":{"dtype":"U8","shape":[2],"data_offsets":[10,12]},
                 "f32":{"dtype":"F32","shape":[],"data_offsets":[12,16]}}""";
        short h = Float.floatToFloat16(-1.5f);
        int bf = Float.floatToRawIntBits(3.0f) >>> 16;
        int f32 = Float.floatToRawIntBits(0.25f);
        byte[] data = {(byte) h, (byte) (h >> 8), 0, 0x3C, (byte) bf, (byte) (bf >> 8), 0, 0, (byte) 0xFE, 5, (byte) 0xFE, 5,
                (byte) f32, (byte) (f32 >> 8), (byte) (f32 >> 16), (byte) (f32 >> 24)};
        SafetensorsWriting.raw(f, header, data);
        try (SafetensorsFile s = SafetensorsFile.open(f)) {
            assertThat(s.tensors().keySet()).containsExactly("f16", "bf16", "i8", "u8", "f32");
            assertThat(s.tensors().get("f16").toFloats()).containsExactly(-1.5f, 1.0f);
            assertThat(s.tensors().get("bf16").toFloats()).containsExactly(3.0f, 0f);
            assertThat(s.tensors().get("i8").toFloats()).containsExactly(-2f, 5f);
            assertThat(s.tensors().get("i8").dtype()).isEqualTo(DType.I8);
            assertThat(s.tensors().get("u8").toFloats()).containsExactly(254f, 5f);
            assertThat(s.tensors().get("f32").toFloats()).containsExactly(0.25f);
        }
    }

    private void assertFileRejected(String header, int dataBytes, String... message) throws Exception {
        Path f = Files.createTempFile(dir, "bad", ".safetensors");
        SafetensorsWriting.raw(f, header, new byte[dataBytes]);
        assertThatThrownBy(() -> SafetensorsFile.open(f).close()).isInstanceOf(CheckpointException.class).hasMessageContainingAll(message);
    }

    @Test
    void rejectsMalformedFiles() throws Exception {
        Path tiny = Files.write(dir.resolve("tiny.safetensors"), new byte[] {1, 2, 3});
        assertThatThrownBy(() -> SafetensorsFile.open(tiny)).isInstanceOf(CheckpointException.class).hasMessageContaining("truncated");
        byte[] real = Files.readAllBytes(SharedFiles.model("stories260K-hf/model.safetensors"));
        Path cut = Files.write(dir.resolve("cut.safetensors"), java.util.Arrays.copyOf(real, real.length - 1000));
        assertThatThrownBy(() -> SafetensorsFile.open(cut)).isInstanceOf(CheckpointException.class).hasMessageContaining("lies beyond");
        Path headerCut = Files.write(dir.resolve("hcut.safetensors"), java.util.Arrays.copyOf(real, 200));
        assertThatThrownBy(() -> SafetensorsFile.open(headerCut)).isInstanceOf(CheckpointException.class).hasMessageContaining("header length");

        assertFileRejected("[1, 2]", 0, "not a JSON object");
        assertFileRejected("{\"a\": ", 0, "not valid JSON");
        assertFileRejected("{\"w\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]}}", 8, "tensor w", "lies beyond the 8 data bytes");
        assertFileRejected("{\"a\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]},"
                + "\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[8,16]}}", 16, "overlaps");
        assertFileRejected("{\"w\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[0,16]}}", 16, "spans 16 bytes", "needs 12");
        assertFileRejected("{\"w\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[16,0]}}", 16, "data_offsets [16, 0]");
        assertFileRejected("{\"w\":{\"dtype\":\"F64\",\"shape\":[2],\"data_offsets\":[0,16]}}", 16, "tensor w", "dtype \"F64\"");
        assertFileRejected("{\"w\":{\"dtype\":\"I32\",\"shape\":[2],\"data_offsets\":[0,8]}}", 8, "dtype \"I32\"");
        assertFileRejected("{\"w\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[0,0]}}", 0, "dimension 0");
    }

    @Test
    void headerLengthBeyondTheFileIsRefused() throws Exception {
        byte[] bytes = new byte[16];
        java.nio.ByteBuffer.wrap(bytes).order(java.nio.ByteOrder.LITTLE_ENDIAN).putLong(1L << 40);
        Path f = Files.write(dir.resolve("long.safetensors"), bytes);
        assertThatThrownBy(() -> SafetensorsFile.open(f)).isInstanceOf(CheckpointException.class)
                .hasMessageContaining("header length 1099511627776 exceeds the file's 8 remaining bytes");
    }

    /** A stories260K folder whose config.json was edited. */
    private Path withConfig(Consumer<ObjectNode> edit) throws Exception {
        Path folder = Files.createTempDirectory(dir, "edited");
        SafetensorsWriting.copyOfStories260k(folder, true);
        ObjectNode config = (ObjectNode) SafetensorsWriting.JSON.readTree(folder.resolve("config.json").toFile());
        edit.accept(config);
        Files.writeString(folder.resolve("config.json"), config.toString());
        return folder;
    }

    @Test
    void refusesAConfigWithFewerLayersThanTheWeightsNamingTheExtras() throws Exception {
        Path f = withConfig(c -> c.put("num_hidden_layers", c.get("num_hidden_layers").asInt() - 1));
        assertThatThrownBy(() -> SafetensorsCheckpoint.open(f)).isInstanceOf(CheckpointException.class)
                .hasMessageContainingAll("tensors are not used by the 4-layer model its config describes", "model.layers.4.");
    }

    @Test
    void refusesMissingConfigFields() throws Exception {
        Path f = withConfig(c -> c.remove("rms_norm_eps"));
        assertThatThrownBy(() -> SafetensorsCheckpoint.open(f)).isInstanceOf(CheckpointException.class).hasMessageContaining("missing rms_norm_eps");
    }

    @Test
    void defaultsRopeThetaAndTying() throws Exception {
        Path f = withConfig(c -> {
            c.remove("rope_theta");
            c.remove("tie_word_embeddings");
        });
        try (SafetensorsCheckpoint c = SafetensorsCheckpoint.open(f)) {
            assertThat(c.config().ropeTheta()).isEqualTo(10000f);
            assertThat(c.config().tiedEmbeddings()).isFalse();
        }
    }

    @Test
    void kvHeadsDefaultToHeads() throws Exception {
        Path f = withConfig(c -> c.remove("num_key_value_heads"));
        // with 8 kv heads implied, the real 4-head k_proj no longer fits: the default was applied
        assertThatThrownBy(() -> SafetensorsCheckpoint.open(f)).isInstanceOf(CheckpointException.class)
                .hasMessageContaining("k_proj.weight has shape [32, 64], the config implies [64, 64]");
    }

    @Test
    void refusesNonLlamaArchitectures() throws Exception {
        Path mistral = withConfig(c -> c.putArray("architectures").add("MistralForCausalLM"));
        assertThatThrownBy(() -> SafetensorsCheckpoint.open(mistral)).isInstanceOf(CheckpointException.class).hasMessageContaining("MistralForCausalLM");
    }

    @Test
    void refusesModelTypeAndRopeScalingItCannotHonour() throws Exception {
        Path gpt = withConfig(c -> {
            c.remove("architectures");
            c.put("model_type", "gpt2");
        });
        assertThatThrownBy(() -> SafetensorsCheckpoint.open(gpt)).isInstanceOf(CheckpointException.class).hasMessageContaining("architecture 'gpt2' (model_type) is not supported");
        Path scaled = withConfig(c -> c.putObject("rope_scaling").put("rope_type", "llama3"));
        assertThatThrownBy(() -> SafetensorsCheckpoint.open(scaled)).isInstanceOf(CheckpointException.class).hasMessageContaining("rope_scaling");
    }

    @Test
    void refusesATensorMissingForALayer() throws Exception {
        SafetensorsWriting.copyOfStories260k(dir, false);
        try (SafetensorsCheckpoint real = SafetensorsCheckpoint.open(SharedFiles.model("stories260K-hf"))) {
            List<Tensor> kept = real.tensors().values().stream().filter(t -> !t.name().equals("model.layers.3.mlp.up_proj.weight")).toList();
            SafetensorsWriting.write(dir.resolve("model.safetensors"), kept);
        }
        assertThatThrownBy(() -> SafetensorsCheckpoint.open(dir)).isInstanceOf(CheckpointException.class).hasMessageContaining("missing tensor blk.3.ffn_up");
    }

    @Test
    void fallsBackToTokenizerJson() throws Exception {
        Path folder = SafetensorsWriting.copyOfStories260k(dir, true);
        Files.delete(folder.resolve("tokenizer.model"));
        Files.writeString(folder.resolve("tokenizer.json"), """
                {"added_tokens":[{"id":3,"content":"<|end|>","special":true}],
                 "pre_tokenizer":{"type":"ByteLevel","add_prefix_space":false,"use_regex":true},
                 "model":{"type":"BPE","vocab":{"a":0,"b":1,"ab":2},"merges":["a b",["ab","b"]]}}""");
        try (SafetensorsCheckpoint c = SafetensorsCheckpoint.open(folder)) {
            Vocabulary v = c.vocabulary().orElseThrow();
            assertThat(v.kind()).isEqualTo(Vocabulary.Kind.BPE);
            // padded to config.json's vocab_size with unused [PAD<id>] tokens, as convert_hf_to_gguf.py pads
            assertThat(v.pieces()).hasSize(512).startsWith("a", "b", "ab", "<|end|>", "[PAD4]");
            assertThat(v.merges()).containsExactly("a b", "ab b");
            assertThat(v.bos()).isEqualTo(1); // from config.json bos_token_id
            assertThat(v.eos()).isEqualTo(2);
            assertThat(v.types()).startsWith(TokenType.NORMAL, TokenType.NORMAL, TokenType.NORMAL, TokenType.CONTROL, TokenType.UNUSED);
            assertThat(v.preTokenizer()).isEqualTo(PreTokenizer.GPT2);
        }
        Files.writeString(folder.resolve("tokenizer.json"), "{\"model\":{\"type\":\"Unigram\",\"vocab\":[]}}");
        assertThatThrownBy(() -> SafetensorsCheckpoint.open(folder)).isInstanceOf(CheckpointException.class).hasMessageContaining("'Unigram' is not supported");
    }

    @Test
    void mapsFilesBeyondTwoGigabytes() throws Exception {
        long elements = (1L << 31) + 8;
        Path f = dir.resolve("big.safetensors");
        SafetensorsWriting.raw(f, "{\"big\":{\"dtype\":\"U8\",\"shape\":[" + elements + "],\"data_offsets\":[0," + elements + "]}}", new byte[0]);
        try (var raf = new java.io.RandomAccessFile(f.toFile(), "rw")) {
            raf.setLength(raf.length() + elements); // sparse
            raf.seek(raf.length() - 1);
            raf.write(9);
        }
        try (SafetensorsFile s = SafetensorsFile.open(f)) {
            Tensor big = s.tensors().get("big");
            assertThat(big.byteSize()).isEqualTo(elements);
            assertThat(big.data().get(java.lang.foreign.ValueLayout.JAVA_BYTE, elements - 1)).isEqualTo((byte) 9);
        }
    }

    @Test
    void segmentsAreSlicesOfTheMapping() throws Exception {
        try (SafetensorsFile f = SafetensorsFile.open(SharedFiles.model("stories260K-hf/model.safetensors"))) {
            MemorySegment a = f.tensors().firstEntry().getValue().data();
            assertThat(a.isMapped()).isTrue();
        }
    }
}
