package jquant.pack.ternary;

import jquant.formats.gguf.GgufValue;
import org.junit.jupiter.api.Test;

import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SequencedMap;

import static org.assertj.core.api.Assertions.assertThatThrownBy;

class TernaryModelWriterTest {

    @Test
    void aWriteThatWouldDropOrChangeASourceKeyIsRefused() {
        Path withKey = Path.of("hadamard.gguf");
        SequencedMap<String, GgufValue> source = new LinkedHashMap<>();
        source.put("general.architecture", GgufValue.string("llama"));
        source.put("prism.hadamard.size", GgufValue.uint32(64));
        source.put("prism.hadamard.layers", GgufValue.stringArray(List.of("attn_q", "ffn_down")));
        Map<String, GgufValue> dropped = new LinkedHashMap<>(source);
        dropped.remove("prism.hadamard.size");
        assertThatThrownBy(() -> TernaryModelWriter.requireCarried(withKey, source, dropped))
                .hasMessageContaining("prism.hadamard.size").hasMessageContaining("dropped");
        Map<String, GgufValue> changed = new LinkedHashMap<>(source);
        changed.put("prism.hadamard.size", GgufValue.uint32(32));
        assertThatThrownBy(() -> TernaryModelWriter.requireCarried(withKey, source, changed)).hasMessageContaining("would change from 64 to 32");
    }
}
