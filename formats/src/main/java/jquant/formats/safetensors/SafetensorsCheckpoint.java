package jquant.formats.safetensors;

import com.fasterxml.jackson.core.type.TypeReference;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.SequencedMap;
import java.util.Set;
import jquant.formats.Checkpoint;
import jquant.formats.CheckpointException;
import jquant.formats.InputFiles;
import jquant.formats.LlamaLayout;
import jquant.formats.ModelConfig;
import jquant.formats.RopeConvention;
import jquant.formats.Tensor;
import jquant.formats.TensorKind;
import jquant.formats.Vocabulary;
import jquant.formats.tokenizer.HfTokenizerJson;
import jquant.formats.tokenizer.SentencePieceModel;

/**
 * A Hugging Face {@code LlamaForCausalLM} or {@code Qwen2ForCausalLM} folder as a {@link Checkpoint}:
 * {@code config.json} ({@link HfConfig}), weights in {@code model.safetensors} or in shards listed by
 * {@code model.safetensors.index.json}, and the tokenizer from {@code tokenizer.model} (SentencePiece) or,
 * failing that, {@code tokenizer.json} (byte-level or SentencePiece-style BPE; see {@link HfTokenizerJson}),
 * padded with unused tokens up to the config's vocab_size. q/k rows are in HF order,
 * {@link RopeConvention#ROTATE_HALF}.
 */
public final class SafetensorsCheckpoint implements Checkpoint {
    public static final String SINGLE_FILE = "model.safetensors";
    public static final String INDEX_FILE = "model.safetensors.index.json";
    public static final String CONFIG_FILE = "config.json";

    private final Path source;
    private final List<SafetensorsFile> files;
    private final ModelConfig config;
    private final SequencedMap<String, Tensor> tensors;
    private final Optional<Vocabulary> vocabulary;
    private final Map<String, Object> metadata;

    private SafetensorsCheckpoint(Path source, Path folder, List<SafetensorsFile> files, Map<String, String> weightMap) throws CheckpointException {
        this.source = source;
        this.files = files;
        Path configFile = folder.resolve(CONFIG_FILE);
        JsonNode configJson = readJson(configFile);
        this.config = HfConfig.parse(configFile, configJson);

        SequencedMap<String, Tensor> all = new LinkedHashMap<>();
        Map<String, Object> meta = new LinkedHashMap<>(new ObjectMapper().convertValue(configJson, new TypeReference<Map<String, Object>>() {}));
        for (SafetensorsFile f : files) {
            for (Tensor t : f.tensors().values()) {
                if (all.put(t.name(), t) != null) throw new CheckpointException(f.path(), "tensor " + t.name() + " is also in another shard");
            }
            f.metadata().forEach((k, v) -> meta.put("__metadata__." + k, v));
        }
        for (Map.Entry<String, String> e : weightMap.entrySet()) {
            Tensor t = all.get(e.getKey());
            if (t == null || !files.stream().anyMatch(f -> f.path().getFileName().toString().equals(e.getValue()) && f.tensors().containsKey(e.getKey()))) {
                throw new CheckpointException(source, "index lists tensor " + e.getKey() + " in " + e.getValue() + ", which does not hold it");
            }
        }
        this.tensors = Collections.unmodifiableSequencedMap(all);
        this.metadata = Collections.unmodifiableMap(meta);
        this.vocabulary = readVocabulary(folder, configJson).map(v -> v.paddedTo(config.vocabSize()));
        LlamaLayout.verify(this);
        LlamaLayout.requireEveryTensorUsed(this, name -> name.endsWith(".rotary_emb.inv_freq"));
    }

    /**
     * What a folder without a Hugging Face model holds that jquant opens instead (a user may have meant one of
     * them): {@code "; it holds a.bin, b.gguf: pass one of those files"}, or nothing.
     */
    private static String modelFilesIn(Path path) {
        if (!Files.isDirectory(path)) return "";
        List<String> found = new ArrayList<>();
        try (DirectoryStream<Path> files = Files.newDirectoryStream(path, "*.{bin,gguf,jqw,safetensors}")) {
            for (Path f : files) {
                String name = f.getFileName().toString();
                if (Files.isRegularFile(f) && !name.equals("tokenizer.bin") && !name.matches("tok[0-9]+\\.bin")) found.add(name);
            }
        } catch (IOException e) {
            return "";  // the folder's own reason is not this error's: it is named when a file in it is read
        }
        if (found.isEmpty()) return "";
        Collections.sort(found);
        int shown = 4;
        String names = String.join(", ", found.subList(0, Math.min(shown, found.size())))
                + (found.size() > shown ? " and " + (found.size() - shown) + " more" : "");
        return "; it holds " + names + ": pass " + (found.size() == 1 ? "that file" : "one of those files");
    }

    /**
     * Opens a checkpoint from its folder, its {@code .safetensors} file, or its index file. The
     * {@code config.json} (and tokenizer files) are taken from the same folder.
     */
    public static SafetensorsCheckpoint open(Path path) throws CheckpointException {
        Path folder = Files.isDirectory(path) ? path : path.toAbsolutePath().getParent();
        Path index = Files.isDirectory(path) ? folder.resolve(INDEX_FILE) : path;
        boolean sharded = Files.isDirectory(path) ? Files.exists(index) : path.getFileName().toString().endsWith(".index.json");
        List<SafetensorsFile> files = new ArrayList<>();
        try {
            Map<String, String> weightMap = new LinkedHashMap<>();
            if (sharded) {
                weightMap = readWeightMap(index);
                Set<String> shardNames = new LinkedHashSet<>(weightMap.values());
                for (String shard : shardNames) {
                    if (shard.contains("/") || shard.contains("\\") || shard.equals("..")) {
                        throw new CheckpointException(index, "shard " + shard + " is not a file name beside the index");
                    }
                    files.add(SafetensorsFile.open(folder.resolve(shard)));
                }
            } else {
                Path single = Files.isDirectory(path) ? folder.resolve(SINGLE_FILE) : path;
                if (!Files.isRegularFile(single)) throw new CheckpointException(path, "no " + SINGLE_FILE + " or " + INDEX_FILE + modelFilesIn(path));
                files.add(SafetensorsFile.open(single));
            }
            return new SafetensorsCheckpoint(path, folder, files, weightMap);
        } catch (CheckpointException e) {
            files.forEach(SafetensorsFile::close);
            throw e;
        } catch (RuntimeException e) {
            files.forEach(SafetensorsFile::close);
            throw new CheckpointException(path, "malformed checkpoint: " + e.getMessage(), e);
        }
    }

    private static Map<String, String> readWeightMap(Path index) throws CheckpointException {
        JsonNode map = readJson(index).path("weight_map");
        if (!map.isObject() || map.isEmpty()) throw new CheckpointException(index, "no weight_map object");
        Map<String, String> out = new LinkedHashMap<>();
        for (Map.Entry<String, JsonNode> e : map.properties()) {
            if (!e.getValue().isTextual()) throw new CheckpointException(index, "weight_map entry " + e.getKey() + " is not a file name");
            out.put(e.getKey(), e.getValue().asText());
        }
        return out;
    }

    private static JsonNode readJson(Path file) throws CheckpointException {
        if (!Files.exists(file)) throw new CheckpointException(file, "missing");
        byte[] bytes = InputFiles.readAllBytes(file);
        try {
            return new ObjectMapper().readTree(bytes);
        } catch (IOException e) {
            throw new CheckpointException(file, "not valid JSON: " + e.getMessage(), e);
        }
    }

    private static Optional<Vocabulary> readVocabulary(Path folder, JsonNode config) throws CheckpointException {
        Path spModel = folder.resolve("tokenizer.model");
        if (Files.isRegularFile(spModel)) {
            Path tokenizerConfig = folder.resolve("tokenizer_config.json");
            boolean addBos = !Files.isRegularFile(tokenizerConfig) || readJson(tokenizerConfig).path("add_bos_token").asBoolean(true);
            return Optional.of(SentencePieceModel.read(spModel).withAddBos(addBos));
        }
        Path tokenizerJson = folder.resolve("tokenizer.json");
        if (Files.isRegularFile(tokenizerJson)) {
            return Optional.of(HfTokenizerJson.read(tokenizerJson, config.path("bos_token_id").asInt(-1), config.path("eos_token_id").asInt(-1)));
        }
        return Optional.empty();
    }

    @Override public Path source() { return source; }

    @Override public String format() { return "safetensors"; }

    @Override public ModelConfig config() { return config; }

    @Override public RopeConvention rope() { return RopeConvention.ROTATE_HALF; }

    @Override public SequencedMap<String, Tensor> tensors() { return tensors; }

    @Override
    public Optional<String> sourceName(TensorKind kind, int layer) {
        String name = HfNames.of(kind, layer);
        return tensors.containsKey(name) ? Optional.of(name) : Optional.empty();
    }

    @Override public Optional<Vocabulary> vocabulary() { return vocabulary; }

    /** config.json's fields, then each file's {@code __metadata__} entries as {@code "__metadata__.<key>"}. */
    @Override public Map<String, Object> metadata() { return metadata; }

    @Override
    public void close() {
        files.forEach(SafetensorsFile::close);
    }
}
