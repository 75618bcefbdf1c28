package jquant.fuzz;

import jquant.calibration.allocation.BitAllocation;
import jquant.calibration.Calibrator;
import jquant.formats.DType;
import jquant.formats.ModelConfig;
import jquant.formats.Tensor;
import jquant.formats.TensorKind;
import jquant.formats.Vocabulary;
import jquant.formats.gguf.GgufSource;
import jquant.formats.gguf.GgufValue;
import jquant.formats.gguf.GgufWriter;
import jquant.formats.llama2c.Llama2cWriter;
import jquant.formats.synthetic.SyntheticCheckpoint;
import jquant.formats.synthetic.SyntheticLlama;
import jquant.formats.synthetic.SyntheticVocabulary;
import jquant.pack.model.ModelPacker;
import jquant.quantize.BitPlan;
import jquant.quantize.BitPlanJson;

import java.io.ByteArrayOutputStream;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Set;
import java.util.SequencedMap;

/**
 * Writes the seed inputs of every fuzz target into {@code src/test/resources}: one small valid file per
 * format, made by jquant's own writers from a tiny seeded model (dim 16, one layer, a 270-piece
 * vocabulary, tied embeddings), so the fuzzer starts from inputs that reach deep into each reader. Run it again when a
 * format changes: {@code java -cp "$(cat fuzz/target/fuzz-classpath.txt):fuzz/target/test-classes:…" jquant.fuzz.SeedCorpus fuzz}.
 * Seeds of older format versions ({@code tiny-stats-version-1.gguf}, {@code tiny-stats-version-2.gguf},
 * {@code tiny-stats-version-3.gguf}, {@code tiny-plan-version-1.json}) were written by the writers of their time; they stay as
 * they are.
 */
public final class SeedCorpus {
    private static final String TEXT = "Once upon a time there was a little cat. The cat liked to play in the sun. One day the cat met a dog. "
            + "The dog and the cat played together all day. They were happy friends.\n";

    public static void main(String[] args) throws Exception {
        Path module = Path.of(args.length > 0 ? args[0] : "fuzz");
        Path resources = module.resolve("src/test/resources");
        Path work = Files.createTempDirectory("jquant-seeds");
        ModelConfig config = new ModelConfig(16, 32, 1, 2, 1, 270, 32, 10000f, 1e-5f, true);
        Vocabulary vocabulary = SyntheticVocabulary.build(TEXT, config.vocabSize());
        SyntheticLlama llama = new SyntheticLlama(config, 7);
        try (SyntheticCheckpoint model = new SyntheticCheckpoint(work.resolve("tiny"), llama, DType.F16, vocabulary)) {
            Path gguf = work.resolve("tiny.gguf");
            GgufWriter.write(gguf, GgufSource.metadata(model), GgufSource.tensors(model).stream().map(jquant.formats.gguf.GgufTensor::stored).toList());
            seed(resources, GgufFuzzer.class, "gguf", "tiny-llama.gguf", Files.readAllBytes(gguf));
            seed(resources, GgufFuzzer.class, "gguf", "every-value-type-and-quantized.gguf", quantizedGguf(work));
            seed(resources.resolve("jquant/formats/gguf"), "GgufVocabularyFuzzer", "ggufVocabulary", "tiny-llama.gguf", Files.readAllBytes(gguf));

            Path bin = work.resolve("tiny.bin");
            Llama2cWriter.writeCheckpoint(bin, config, llama::weights);
            seed(resources, Llama2cFuzzer.class, "llama2c", "tiny.bin", Files.readAllBytes(bin));
            Path tokenizer = work.resolve("tokenizer.bin");
            Llama2cWriter.writeTokenizer(tokenizer, vocabulary);
            seed(resources, Llama2cTokenizerFuzzer.class, "llama2cTokenizer", "tokenizer.bin", Files.readAllBytes(tokenizer));

            BitPlan plan = BitAllocation.allocate(model, null, BitAllocation.Options.budget(4), (d, t, name) -> {});
            seed(resources, BitPlanFuzzer.class, "plan", "tiny-plan.json", BitPlanJson.toBytes(plan));
            Path jqw = work.resolve("tiny.jqw");
            ModelPacker.pack(model, new ModelPacker.Options(plan, Set.of(TensorKind.EMBEDDING, TensorKind.HEAD), null), jqw, (d, t, n) -> {});
            seed(resources, JqwFuzzer.class, "jqw", "tiny.jqw", Files.readAllBytes(jqw));

            // With E[x·xᵀ], so the fuzzer reaches the D×D tensor's checks too.
            Path statsFile = work.resolve("stats.gguf");
            Calibrator.calibrate(model, TEXT, new Calibrator.Options(24, 16, 8, List.of(4.0), true, 0), statsFile, (d, t, s) -> {});
            seed(resources, StatsFuzzer.class, "stats", "tiny-stats.gguf", Files.readAllBytes(statsFile));
        }
        seed(resources, SafetensorsFuzzer.class, "safetensors", "three-dtypes.safetensors", safetensors());
        seed(resources, SentencePieceFuzzer.class, "sentencePiece", "tiny.model", sentencePieceModel(vocabulary));
        seed(resources, HfTokenizerJsonFuzzer.class, "tokenizerJson", "byte-level-bpe.json", byteLevelTokenizerJson());
    }

    private static void seed(Path resources, Class<?> target, String method, String name, byte[] bytes) throws Exception {
        seed(resources.resolve("jquant/fuzz"), target.getSimpleName(), method, name, bytes);
    }

    private static void seed(Path packageDir, String target, String method, String name, byte[] bytes) throws Exception {
        Path dir = packageDir.resolve(target + "Inputs").resolve(method);
        Files.createDirectories(dir);
        Files.write(dir.resolve(name), bytes);
    }

    /** Metadata of every GGUF value type, and a Q8_0 and a Q4_0 tensor beside an F32 one. */
    private static byte[] quantizedGguf(Path work) throws Exception {
        SequencedMap<String, GgufValue> meta = new LinkedHashMap<>();
        meta.put("general.architecture", GgufValue.string("llama"));
        meta.put("a.u8", GgufValue.of(jquant.formats.gguf.GgufType.UINT8, 7));
        meta.put("a.i64", GgufValue.of(jquant.formats.gguf.GgufType.INT64, -3));
        meta.put("a.f32", GgufValue.float32(0.5f));
        meta.put("a.bool", GgufValue.bool(true));
        meta.put("a.strings", GgufValue.stringArray(List.of("x", "yz")));
        float[] values = new float[64];
        for (int i = 0; i < values.length; i++) values[i] = (i - 32) / 7f;
        ByteBuffer f32 = ByteBuffer.allocate(values.length * 4).order(ByteOrder.LITTLE_ENDIAN);
        for (float v : values) f32.putFloat(v);
        List<Tensor> tensors = List.of(new Tensor("f32", new long[] {2, 32}, DType.F32, MemorySegment.ofArray(f32.array())),
                new Tensor("q8", new long[] {2, 32}, DType.Q8_0, MemorySegment.ofArray(new byte[2 * 34])),
                new Tensor("q4", new long[] {2, 32}, DType.Q4_0, MemorySegment.ofArray(new byte[2 * 18])));
        Path file = work.resolve("quantized.gguf");
        GgufWriter.write(file, meta, tensors);
        return Files.readAllBytes(file);
    }

    private static byte[] safetensors() {
        String header = "{\"__metadata__\":{\"format\":\"pt\"},\"a\":{\"dtype\":\"F32\",\"shape\":[2,2],\"data_offsets\":[0,16]},"
                + "\"b\":{\"dtype\":\"BF16\",\"shape\":[4],\"data_offsets\":[16,24]},\"c\":{\"dtype\":\"I8\",\"shape\":[2,4],\"data_offsets\":[24,32]}}";
        byte[] h = header.getBytes(StandardCharsets.UTF_8);
        ByteBuffer b = ByteBuffer.allocate(8 + h.length + 32).order(ByteOrder.LITTLE_ENDIAN);
        b.putLong(h.length).put(h);
        for (int i = 0; i < 4; i++) b.putFloat(i * 0.25f);
        for (int i = 0; i < 4; i++) b.putShort((short) (0x3F80 + i));
        for (int i = 0; i < 8; i++) b.put((byte) (i - 4));
        return b.array();
    }

    /** A SentencePiece ModelProto with {@code vocabulary}'s pieces, scores and types (field 1: piece = 1, score = 2, type = 3). */
    private static byte[] sentencePieceModel(Vocabulary vocabulary) {
        ByteArrayOutputStream model = new ByteArrayOutputStream();
        for (int id = 0; id < vocabulary.size(); id++) {
            ByteArrayOutputStream piece = new ByteArrayOutputStream();
            byte[] text = vocabulary.pieces().get(id).getBytes(StandardCharsets.UTF_8);
            piece.write(0x0A);
            varint(piece, text.length);
            piece.writeBytes(text);
            piece.write(0x15);
            piece.writeBytes(ByteBuffer.allocate(4).order(ByteOrder.LITTLE_ENDIAN).putFloat(vocabulary.scores()[id]).array());
            piece.write(0x18);
            varint(piece, vocabulary.types().get(id).code());
            model.write(0x0A);
            varint(model, piece.size());
            model.writeBytes(piece.toByteArray());
        }
        return model.toByteArray();
    }

    private static void varint(ByteArrayOutputStream out, long v) {
        while ((v & ~0x7FL) != 0) {
            out.write((int) ((v & 0x7F) | 0x80));
            v >>>= 7;
        }
        out.write((int) v);
    }

    /**
     * A byte-level BPE tokenizer.json (GPT-2 style): the 256 byte characters of GPT-2's byte-to-unicode
     * table, a few merges, a Split pre-tokenizer and an added special token.
     */
    private static byte[] byteLevelTokenizerJson() {
        StringBuilder vocab = new StringBuilder();
        int shifted = 0;
        for (int b = 0; b < 256; b++) {
            boolean printable = b >= 33 && b <= 126 || b >= 161 && b <= 172 || b >= 174;
            String ch = String.valueOf((char) (printable ? b : 256 + shifted++));
            vocab.append(b == 0 ? "" : ",").append('"').append(ch.equals("\"") ? "\\\"" : ch.equals("\\") ? "\\\\" : ch).append("\":").append(b);
        }
        int id = 256;
        for (String extra : List.of("\u0120t", "he", "\u0120the", "in", "\u0120a")) vocab.append(",\"").append(extra).append("\":").append(id++);
        String json = "{\"version\":\"1.0\",\"added_tokens\":[{\"id\":" + id + ",\"content\":\"<|end|>\",\"special\":true}],"
                + "\"normalizer\":null,"
                + "\"pre_tokenizer\":{\"type\":\"Sequence\",\"pretokenizers\":[{\"type\":\"Split\",\"pattern\":{\"Regex\":\"'s|'t| ?\\\\p{L}+| ?\\\\p{N}+| ?[^\\\\s\\\\p{L}\\\\p{N}]+|\\\\s+\"},"
                + "\"behavior\":\"Isolated\",\"invert\":false},{\"type\":\"ByteLevel\",\"add_prefix_space\":false,\"trim_offsets\":true,\"use_regex\":false}]},"
                + "\"decoder\":{\"type\":\"ByteLevel\"},"
                + "\"model\":{\"type\":\"BPE\",\"dropout\":null,\"unk_token\":null,\"ignore_merges\":false,\"byte_fallback\":false,"
                + "\"vocab\":{" + vocab + ",\"<|end|>\":" + id + "},\"merges\":[\"\u0120 t\",\"h e\",\"\u0120t he\",\"i n\",\"\u0120 a\"]}}";
        return json.getBytes(StandardCharsets.UTF_8);
    }
}
