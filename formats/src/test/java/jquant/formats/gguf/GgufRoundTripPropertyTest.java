package jquant.formats.gguf;

import jquant.formats.DType;
import jquant.formats.Tensor;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.SequencedMap;

import static org.assertj.core.api.Assertions.assertThat;

/** GGUF write → read → write over generated metadata and tensors (jqwik): every value and byte survives, and the rewrite is identical. */
class GgufRoundTripPropertyTest {

    record Model(SequencedMap<String, GgufValue> metadata, List<Tensor> tensors) {}

    @Provide
    Arbitrary<Model> models() {
        Arbitrary<GgufValue> values = Arbitraries.oneOf(
                Arbitraries.strings().ofMaxLength(20).map(GgufValue::string),
                Arbitraries.longs().between(0, 0xFFFF_FFFFL).map(GgufValue::uint32),
                Arbitraries.longs().map(v -> GgufValue.of(GgufType.INT64, v)),
                Arbitraries.floats().map(GgufValue::float32),
                Arbitraries.of(true, false).map(GgufValue::bool),
                Arbitraries.strings().ofMaxLength(8).list().ofMaxSize(5).map(GgufValue::stringArray));
        Arbitrary<SequencedMap<String, GgufValue>> metadata = values.list().ofMaxSize(8).map(vs -> {
            SequencedMap<String, GgufValue> m = new LinkedHashMap<>();
            for (int i = 0; i < vs.size(); i++) m.put("k." + i, vs.get(i));
            return m;
        });
        Arbitrary<Tensor> tensor = Combinators.combine(Arbitraries.integers().between(1, 5), Arbitraries.integers().between(1, 40))
                .flatAs((rows, cols) -> Arbitraries.floats().array(float[].class).ofSize(rows * cols).map(v -> {
                    ByteBuffer b = ByteBuffer.allocate(v.length * 4).order(ByteOrder.LITTLE_ENDIAN);
                    for (float f : v) b.putFloat(f);
                    return new Tensor("t", new long[] {rows, cols}, DType.F32, MemorySegment.ofArray(b.array()));
                }));
        Arbitrary<List<Tensor>> tensors = tensor.list().ofMaxSize(4).map(ts -> {
            List<Tensor> named = new ArrayList<>();
            for (int i = 0; i < ts.size(); i++) named.add(new Tensor("t." + i, ts.get(i).shape(), DType.F32, ts.get(i).data()));
            return named;
        });
        return Combinators.combine(metadata, tensors).as(Model::new);
    }

    @Property(tries = 200)
    void everyValueAndTensorByteSurvivesAndTheRewriteIsIdentical(@ForAll("models") Model m) throws IOException {
        Path first = Files.createTempFile("roundtrip", ".gguf");
        Path second = Files.createTempFile("roundtrip", ".gguf");
        try {
            GgufWriter.write(first, m.metadata(), m.tensors());
            try (GgufFile f = GgufFile.open(first)) {
                assertThat(f.metadata()).isEqualTo(m.metadata());
                assertThat(f.tensors().keySet()).containsExactlyElementsOf(m.tensors().stream().map(Tensor::name).toList());
                for (Tensor t : m.tensors()) {
                    Tensor read = f.tensors().get(t.name());
                    assertThat(read.shape()).isEqualTo(t.shape());
                    assertThat(read.data().toArray(ValueLayout.JAVA_BYTE)).isEqualTo(t.data().toArray(ValueLayout.JAVA_BYTE));
                }
                GgufWriter.write(second, f.metadata(), f.tensors().values());
            }
            assertThat(Files.mismatch(first, second)).isEqualTo(-1L);
        } finally {
            Files.deleteIfExists(first);
            Files.deleteIfExists(second);
        }
    }
}
