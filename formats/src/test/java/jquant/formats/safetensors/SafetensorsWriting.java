package jquant.formats.safetensors;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import jquant.testsupport.SharedFiles;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Collection;
import jquant.formats.Tensor;

/** Test-side safetensors writing: whole files through {@link SafetensorsWriter}, or raw header + data for malformed ones. */
final class SafetensorsWriting {
    static final ObjectMapper JSON = new ObjectMapper();

    private SafetensorsWriting() {}

    static void raw(Path file, String header, byte[] data) throws IOException {
        byte[] h = header.getBytes(StandardCharsets.UTF_8);
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        out.writeBytes(ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN).putLong(h.length).array());
        out.writeBytes(h);
        out.writeBytes(data);
        Files.write(file, out.toByteArray());
    }

    static void write(Path file, Collection<Tensor> tensors) throws IOException {
        SafetensorsWriter.write(file, tensors.stream().map(jquant.formats.gguf.GgufWriter.PendingTensor::of).toList());
    }

    /** A folder holding the real stories260K config, tokenizer files and, if asked, its weights. */
    static Path copyOfStories260k(Path dir, boolean withWeights) throws IOException {
        Path source = SharedFiles.model("stories260K-hf");
        for (String f : new String[] {"config.json", "tokenizer.model", "tokenizer_config.json"}) {
            Files.copy(source.resolve(f), dir.resolve(f));
        }
        if (withWeights) Files.copy(source.resolve("model.safetensors"), dir.resolve("model.safetensors"));
        return dir;
    }
}
