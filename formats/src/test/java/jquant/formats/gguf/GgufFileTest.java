package jquant.formats.gguf;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.SequencedMap;
import jquant.formats.CheckpointException;
import jquant.formats.DType;
import jquant.formats.Tensor;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The low-level GGUF reader on hand-built files: every value type, and each kind of corruption. */
class GgufFileTest {
    @TempDir
    Path dir;

    private Path file(byte[] bytes) throws IOException {
        return Files.write(Files.createTempFile(dir, "crafted", ".gguf"), bytes);
    }

    private void assertRejected(byte[] bytes, String... messageParts) {
        assertThatThrownBy(() -> {
            try (GgufFile f = GgufFile.open(file(bytes))) {
                f.tensors();
            }
        }).isInstanceOf(CheckpointException.class).hasMessageContainingAll(messageParts);
    }

    @Test
    void readsEveryValueTypeIncludingNestedArrays() throws IOException {
        byte[] bytes = new GgufBytes().header(3, 1, 14)
                .string("u8").u32(0).u8(255)
                .string("i8").u32(1).u8(0x80)
                .string("u16").u32(2).u8(0x34).u8(0x12)
                .string("i16").u32(3).u8(0xFF).u8(0xFF)
                .string("u32").u32(4).u32(0xFFFF_FFFFL)
                .string("i32").u32(5).u32(-7)
                .string("f32").u32(6).f32(1.5f)
                .string("bool").u32(7).u8(1)
                .string("str").u32(8).string("héllo")
                .string("u64").u32(10).u64(-1)
                .string("i64").u32(11).u64(-42)
                .string("f64").u32(12).u64(Double.doubleToRawLongBits(-2.25))
                .string("general.alignment").u32(4).u32(64)
                .string("nested").u32(9).u32(9).u64(2)
                    .u32(5).u64(2).u32(1).u32(2)
                    .u32(8).u64(1).string("x")
                .tensor("t", new long[] {4, 2}, 0, 0)
                .padTo(64).zeros(32).bytes();
        try (GgufFile f = GgufFile.open(file(bytes))) {
            SequencedMap<String, GgufValue> m = f.metadata();
            assertThat(m.keySet()).containsExactly("u8", "i8", "u16", "i16", "u32", "i32", "f32", "bool", "str", "u64", "i64", "f64", "general.alignment", "nested");
            assertThat(m.get("u8")).isEqualTo(GgufValue.of(GgufType.UINT8, 255));
            assertThat(m.get("i8")).isEqualTo(GgufValue.of(GgufType.INT8, -128));
            assertThat(m.get("u16").asLong()).isEqualTo(0x1234);
            assertThat(m.get("i16").asLong()).isEqualTo(-1);
            assertThat(m.get("u32").asLong()).isEqualTo(0xFFFF_FFFFL);
            assertThat(m.get("i32").asInt()).isEqualTo(-7);
            assertThat(m.get("f32").asFloat()).isEqualTo(1.5f);
            assertThat(m.get("bool").asBoolean()).isTrue();
            assertThat(m.get("str").asString()).isEqualTo("héllo");
            assertThat(m.get("u64").toJava()).isEqualTo("18446744073709551615");
            assertThat(m.get("i64").asLong()).isEqualTo(-42);
            assertThat(m.get("f64").value()).isEqualTo(-2.25);
            GgufValue.GgufArray nested = m.get("nested").asArray();
            assertThat(nested.elementType()).isEqualTo(GgufType.ARRAY);
            assertThat(nested.elements().get(0).asArray().elements()).extracting(GgufValue::asLong).containsExactly(1L, 2L);
            assertThat(m.get("nested").toJava()).isEqualTo(List.of(List.of(1L, 2L), List.of("x")));
            assertThat(f.alignment()).isEqualTo(64);
            assertThat(f.dataOffset() % 64).isZero();
            Tensor t = f.tensors().get("t");
            assertThat(t.shape()).containsExactly(2, 4);
            assertThat(t.dtype()).isEqualTo(DType.F32);
            assertThat(f.tensorInfos().get(0).dims()).containsExactly(4, 2);
        }
    }

    @Test
    void mapsTensorsBeyondTwoGigabytes() throws IOException {
        long elements = (1L << 31) + 64;
        Path p = file(new GgufBytes().header(3, 2, 0)
                .tensor("small", new long[] {32}, DType.I8.ggmlId(), 0)
                .tensor("big", new long[] {elements}, DType.I8.ggmlId(), 32).padTo(32).bytes());
        try (var raf = new java.io.RandomAccessFile(p.toFile(), "rw")) {
            long dataStart = raf.length();
            raf.setLength(dataStart + 32 + elements); // sparse: no disk blocks are written
            raf.seek(dataStart + 32 + elements - 1);
            raf.write(7);
        }
        try (GgufFile f = GgufFile.open(p)) {
            Tensor big = f.tensors().get("big");
            assertThat(big.byteSize()).isEqualTo(elements);
            assertThat(big.data().get(java.lang.foreign.ValueLayout.JAVA_BYTE, elements - 1)).isEqualTo((byte) 7);
        }
    }

    @Test
    void readsVersion2() throws IOException {
        byte[] bytes = new GgufBytes().header(2, 0, 1).string("k").u32(8).string("v").bytes();
        try (GgufFile f = GgufFile.open(file(bytes))) {
            assertThat(f.version()).isEqualTo(2);
            assertThat(f.metadata().get("k").asString()).isEqualTo("v");
        }
    }

    @Test
    void rejectsBadMagicAndVersions() {
        assertRejected(new byte[] {'G', 'G', 'M', 'L', 3, 0, 0, 0}, "bad magic");
        assertRejected(new GgufBytes().header(1, 0, 0).bytes(), "unsupported GGUF version 1");
        assertRejected(new GgufBytes().u32(GgufFile.MAGIC).u32(Integer.reverseBytes(3)).u64(0).u64(0).bytes(), "big-endian");
    }

    @Test
    void rejectsUnknownValueTypeNamingTheId() {
        assertRejected(new GgufBytes().header(3, 0, 1).string("k").u32(13).u32(0).bytes(), "unknown GGUF value type id 13", "metadata k");
        assertRejected(new GgufBytes().header(3, 0, 1).string("k").u32(9).u32(77).u64(0).bytes(), "unknown GGUF value type id 77");
    }

    @Test
    void rejectsTypeIdsGgmlDoesNotDefineNamingTheId() {
        for (long id : new long[] {4, 31, 40, 77, 0xFFFF_FFFFL}) { // 4 and 31 are ids ggml has retired
            byte[] bytes = new GgufBytes().header(3, 1, 0).tensor("w", new long[] {256, 2}, (int) id, 0).padTo(32).zeros(1024).bytes();
            assertRejected(bytes, "tensor w", "ggml type id " + id, "not a ggml tensor type");
        }
    }

    /** Block bytes of the types jquant lists but does not decode, as ggml-common.h's block structs add up. */
    private static final java.util.Map<DType, Integer> GGML_STRUCT_BYTES = java.util.Map.ofEntries(
            java.util.Map.entry(DType.Q8_1, 2 * 2 + 32),
            java.util.Map.entry(DType.IQ2_XXS, 2 + 256 / 8 * 2),
            java.util.Map.entry(DType.IQ2_XS, 2 + 256 / 8 * 2 + 256 / 32),
            java.util.Map.entry(DType.IQ3_XXS, 2 + 3 * 256 / 8),
            java.util.Map.entry(DType.IQ1_S, 2 + 256 / 8 + 256 / 16),
            java.util.Map.entry(DType.IQ4_NL, 2 + 32 / 2),
            java.util.Map.entry(DType.IQ3_S, 2 + 256 / 4 + 256 / 32 + 256 / 8 + 256 / 64),
            java.util.Map.entry(DType.IQ2_S, 2 + 256 / 4 + 256 / 32 + 256 / 32),
            java.util.Map.entry(DType.IQ4_XS, 2 + 2 + 256 / 64 + 256 / 2),
            java.util.Map.entry(DType.I16, 2),
            java.util.Map.entry(DType.I32, 4),
            java.util.Map.entry(DType.I64, 8),
            java.util.Map.entry(DType.F64, 8),
            java.util.Map.entry(DType.IQ1_M, 256 / 8 + 256 / 16 + 256 / 32),
            java.util.Map.entry(DType.MXFP4, 1 + 32 / 2));

    @Test
    void filesWithUndecodableGgmlTypesOpenForInspectionAndFailOnlyOnValues() throws IOException {
        List<DType> undecodable = java.util.Arrays.stream(DType.values()).filter(t -> !t.isDecodable()).toList();
        assertThat(undecodable).containsExactlyInAnyOrderElementsOf(GGML_STRUCT_BYTES.keySet());
        // One F32 tensor, then one tensor of every undecodable type, each [3 rows × 2 blocks], packed
        // back to back at aligned offsets; the data section ends exactly where the last tensor does,
        // so a byte size one too large would put it out of range.
        GgufBytes b = new GgufBytes().header(3, 1 + undecodable.size(), 0).tensor("plain", new long[] {4}, 0, 0);
        long offset = 32;
        List<Long> sizes = new java.util.ArrayList<>();
        for (DType t : undecodable) {
            long size = 3L * 2 * GGML_STRUCT_BYTES.get(t);
            b.tensor("w." + t, new long[] {2L * t.blockSize(), 3}, t.ggmlId(), offset);
            sizes.add(size);
            offset = GgufFile.alignUp(offset + size, 32);
        }
        b.padTo(32).f32(1f).f32(-2f).f32(3f).f32(0.5f).zeros(16);
        for (int i = 0; i < sizes.size(); i++) {
            b.zeros(Math.toIntExact(sizes.get(i)));
            if (i < sizes.size() - 1) b.padTo(32);
        }
        try (GgufFile f = GgufFile.open(file(b.bytes()))) {
            assertThat(f.tensorInfos()).extracting(GgufTensorInfo::type).containsExactlyElementsOf(
                    java.util.stream.Stream.concat(java.util.stream.Stream.of(DType.F32), undecodable.stream()).toList());
            assertThat(f.tensors().get("plain").toFloats()).containsExactly(1f, -2f, 3f, 0.5f);
            for (int i = 0; i < undecodable.size(); i++) {
                DType t = undecodable.get(i);
                Tensor tensor = f.tensors().get("w." + t);
                assertThat(tensor.dtype()).isEqualTo(t);
                assertThat(tensor.shape()).containsExactly(3, 2L * t.blockSize());
                assertThat(tensor.byteSize()).as(t.name()).isEqualTo(sizes.get(i));
                assertThatThrownBy(tensor::toFloats).as(t.name()).isInstanceOf(UnsupportedOperationException.class)
                        .hasMessageContainingAll("tensor w." + t, t.name(), "id " + t.ggmlId(), "not decode");
                assertThatThrownBy(() -> tensor.row(1)).isInstanceOf(UnsupportedOperationException.class)
                        .hasMessageContaining("tensor w." + t);
            }
        }
    }

    @Test
    void rejectsAbsurdLengthsAndCountsBeforeAllocating() {
        assertRejected(new GgufBytes().header(3, 0, 1).u64(1L << 62).zeros(64).bytes(), "metadata key length", "cannot fit");
        assertRejected(new GgufBytes().header(3, 0, 1).string("k").u32(8).u64(-1).zeros(64).bytes(), "metadata k length", "cannot fit");
        assertRejected(new GgufBytes().header(3, 0, 1).string("k").u32(9).u32(6).u64(1L << 40).zeros(64).bytes(), "element count", "cannot fit");
        assertRejected(new GgufBytes().header(3, 0, 1).string("k").u32(9).u32(9).u64(1L << 30).zeros(64).bytes(), "element count", "cannot fit");
        assertRejected(new GgufBytes().header(3, 1L << 50, 0).bytes(), "tensor count", "cannot fit");
        assertRejected(new GgufBytes().header(3, 0, 1L << 50).bytes(), "metadata count", "cannot fit");
    }

    @Test
    void rejectsArraysNestedDeeperThanAnyRealFile() {
        GgufBytes b = new GgufBytes().header(3, 0, 1).string("k").u32(9);
        for (int i = 0; i < 10_000; i++) b.u32(9).u64(1);
        b.u32(4).u64(1).u32(0);
        assertRejected(b.bytes(), "nests arrays more than 16 deep");
    }

    @Test
    void rejectsTruncatedFiles() {
        byte[] whole = new GgufBytes().header(3, 0, 1).string("key").u32(8).string("value").bytes();
        assertRejected(java.util.Arrays.copyOf(whole, whole.length - 3), "truncated");
        assertRejected(java.util.Arrays.copyOf(whole, 10), "truncated");
    }

    @Test
    void rejectsTensorDataOutOfRangeOrMisaligned() {
        assertRejected(new GgufBytes().header(3, 1, 0).tensor("w", new long[] {8, 8}, 0, 0).padTo(32).zeros(255).bytes(),
                "tensor w data", "outside");
        assertRejected(new GgufBytes().header(3, 1, 0).tensor("w", new long[] {8}, 0, 1L << 40).padTo(32).zeros(32).bytes(),
                "tensor w data", "outside");
        assertRejected(new GgufBytes().header(3, 1, 0).tensor("w", new long[] {8}, 0, 16).padTo(32).zeros(64).bytes(),
                "offset 16 is not a multiple of the alignment 32");
    }

    @Test
    void rejectsOverlappingTensorsAndTypesThatLeaveAGap() throws IOException {
        // Two F32 [16] tensors of 64 bytes each, packed as ggml packs them.
        assertRejected(new GgufBytes().header(3, 2, 0).tensor("a", new long[] {16}, 0, 0).tensor("b", new long[] {16}, 0, 32)
                .padTo(32).zeros(128).bytes(), "tensor a (F32, bytes 0..64 of the data section) overlaps tensor b at 32");
        // a's type edited from F32 to F16: it still fits, but leaves 32 unexplained bytes before b.
        assertRejected(new GgufBytes().header(3, 2, 0).tensor("a", new long[] {16}, 1, 0).tensor("b", new long[] {16}, 0, 64)
                .padTo(32).zeros(128).bytes(), "unexplained gap of 32 bytes after tensor a", "as F16 it takes 32 bytes");
        // The table's order is not the data's: the check goes by offset.
        byte[] packed = new GgufBytes().header(3, 2, 0).tensor("b", new long[] {16}, 0, 64).tensor("a", new long[] {16}, 0, 0)
                .padTo(32).zeros(128).bytes();
        try (GgufFile f = GgufFile.open(file(packed))) {
            assertThat(f.tensors()).containsOnlyKeys("a", "b");
        }
    }

    @Test
    void rejectsBadTensorShapesAndAlignment() {
        assertRejected(new GgufBytes().header(3, 1, 0).tensor("w", new long[] {1, 1, 1, 1, 1}, 0, 0).bytes(), "5 dimensions");
        assertRejected(new GgufBytes().header(3, 1, 0).tensor("w", new long[] {0}, 0, 0).bytes(), "dimension 0");
        assertRejected(new GgufBytes().header(3, 1, 0).tensor("w", new long[] {1L << 40, 1L << 40}, 0, 0).bytes(), "overflows");
        assertRejected(new GgufBytes().header(3, 1, 0).tensor("w", new long[] {48, 1}, DType.Q8_0.ggmlId(), 0).padTo(32).zeros(64).bytes(),
                "not a whole number of Q8_0 blocks");
        assertRejected(new GgufBytes().header(3, 0, 1).string("general.alignment").u32(4).u32(48).bytes(), "not a power of two");
        assertRejected(new GgufBytes().header(3, 0, 1).string("general.alignment").u32(10).u64(32).bytes(), "must be UINT32");
    }

    @Test
    void writerRoundTripsEveryTypeAndAlignment() throws IOException {
        SequencedMap<String, GgufValue> meta = new LinkedHashMap<>();
        meta.put("general.alignment", GgufValue.uint32(128));
        meta.put("a.u8", GgufValue.of(GgufType.UINT8, 7));
        meta.put("a.i16", GgufValue.of(GgufType.INT16, -300));
        meta.put("a.u64", GgufValue.of(GgufType.UINT64, Long.MIN_VALUE));
        meta.put("a.f64", new GgufValue(GgufType.FLOAT64, Math.PI));
        meta.put("a.bool", GgufValue.bool(false));
        meta.put("a.nested", GgufValue.array(GgufType.ARRAY, List.of(GgufValue.stringArray(List.of("p", "q")),
                GgufValue.array(GgufType.FLOAT32, List.of(GgufValue.float32(Float.NaN))))));
        byte[] raw = new byte[3 * 34];
        for (int i = 0; i < raw.length; i++) raw[i] = (byte) (i * 31);
        Tensor q8 = new Tensor("q", new long[] {3, 32}, DType.Q8_0, java.lang.foreign.MemorySegment.ofArray(raw));
        Tensor bf = new Tensor("b", new long[] {5}, DType.BF16, java.lang.foreign.MemorySegment.ofArray(new byte[10]));
        Path target = dir.resolve("out.gguf");
        GgufWriter.write(target, meta, List.of(bf, q8));
        try (GgufFile f = GgufFile.open(target)) {
            assertThat(f.version()).isEqualTo(3);
            assertThat(List.copyOf(f.metadata().entrySet())).isEqualTo(List.copyOf(meta.entrySet()));
            assertThat(f.alignment()).isEqualTo(128);
            assertThat(f.tensorInfos()).extracting(GgufTensorInfo::offset).containsExactly(0L, 128L);
            assertThat(f.tensors().get("q").data().toArray(java.lang.foreign.ValueLayout.JAVA_BYTE)).isEqualTo(raw);
            assertThat(f.tensors().get("b").shape()).containsExactly(5);
        }
        try (var listing = Files.list(dir)) {
            assertThat(listing.map(p -> p.getFileName().toString())).containsExactly("out.gguf");
        }
    }

    @Test
    void writerRefusesTypesGgufCannotName() {
        Tensor u8 = new Tensor("u", new long[] {4}, DType.U8, java.lang.foreign.MemorySegment.ofArray(new byte[4]));
        assertThatThrownBy(() -> GgufWriter.write(dir.resolve("x.gguf"), new LinkedHashMap<>(), List.of(u8)))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("no type id for U8");
        assertThat(dir.resolve("x.gguf")).doesNotExist();
    }
}
