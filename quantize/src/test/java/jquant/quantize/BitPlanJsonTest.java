package jquant.quantize;

import jquant.testsupport.Stories260K;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class BitPlanJsonTest {

    static final String SMALL = """
            {
              "format" : "jquant-bitplan",
              "version" : 3,
              "budget" : 1.5,
              "averageBits" : 1.5,
              "smoothing" : null,
              "model" : null,
              "tensors" : [ {
                "name" : "blk.0.attn_q.weight",
                "rows" : 4,
                "cols" : 16,
                "metric" : "EXACT",
                "alpha" : null,
                "inputClip" : null,
                "averageBits" : 1.5,
                "histogram" : [ 2, 2, 0, 0, 0, 0, 0, 0 ],
                "bits" : "2211"
              } ]
            }
            """;

    static BitPlan realPlan() throws IOException {
        Stories260K model = Stories260K.load();
        List<ErrorTable> tables = new ArrayList<>();
        for (Stories260K.Matrix m : Stories260K.Matrix.values()) {
            tables.add(RelativeError.table(Stories260K.name(m, 1), model.matrix(m, 1), m.rows, m.cols, Metric.APPROX, null));
        }
        return GreedyBitAllocator.allocate(tables, 3.7);
    }

    /** A version 2 plan (no input clips) reads as the full input range; a version 3 one keeps its clip. */
    @Test
    void readsVersionTwoPlansAndInputClips() {
        String v2 = SMALL.replace("\"version\" : 3", "\"version\" : 2").replace("    \"inputClip\" : null,\n", "");
        assertThat(v2).doesNotContain("inputClip");
        assertThat(BitPlanJson.fromBytes(v2.getBytes(StandardCharsets.UTF_8)).tensors().getFirst().inputClip()).isNull();
        BitPlan clipped = BitPlanJson.fromBytes(SMALL.replace("\"inputClip\" : null", "\"inputClip\" : 0.85").getBytes(StandardCharsets.UTF_8));
        assertThat(clipped.tensors().getFirst().inputClip()).isEqualTo(0.85);
        assertThat(BitPlanJson.fromBytes(BitPlanJson.toBytes(clipped))).isEqualTo(clipped);
    }

    @Test
    void writesTheDocumentedLayout() {
        TensorPlan tensor = new TensorPlan("blk.0.attn_q.weight", 4, 16, new byte[] {2, 2, 1, 1}, Metric.EXACT, null);
        BitPlan plan = new BitPlan(1.5, List.of(tensor));
        assertThat(new String(BitPlanJson.toBytes(plan), StandardCharsets.UTF_8)).isEqualTo(SMALL);
        assertThat(BitPlanJson.fromBytes(SMALL.getBytes(StandardCharsets.UTF_8))).isEqualTo(plan);
    }

    /**
     * Version 1 plans as shipped still read, with and without the model they were later given: their α are
     * EdgeFlow's. A version 2 plan names its rule.
     */
    @Test
    void readsVersionOnePlans() {
        String v1 = SMALL.replace("\"version\" : 3", "\"version\" : 1").replace("  \"smoothing\" : null,\n", "").replace("    \"inputClip\" : null,\n", "");
        String fingerprint = "ab".repeat(32);
        String v1WithModel = v1.replace("\"model\" : null", "\"model\" : { \"fingerprint\" : \"" + fingerprint + "\", \"name\" : \"stories260K.bin\" }");
        String v1BeforeModel = v1.replace("  \"model\" : null,\n", "");
        assertThat(v1BeforeModel).doesNotContain("model").doesNotContain("smoothing");
        for (String plan : List.of(v1, v1WithModel, v1BeforeModel)) {
            assertThat(BitPlanJson.fromBytes(plan.getBytes(StandardCharsets.UTF_8)).smoothing()).isNull();
            BitPlan smoothed = BitPlanJson.fromBytes(plan.replace("\"alpha\" : null", "\"alpha\" : 0.5").getBytes(StandardCharsets.UTF_8));
            assertThat(smoothed.smoothing()).isEqualTo(SmoothingRule.EDGEFLOW);
            assertThat(smoothed.tensors().getFirst().alpha()).isEqualTo(0.5);
        }
        assertThat(BitPlanJson.fromBytes(v1WithModel.getBytes(StandardCharsets.UTF_8)).model())
                .isEqualTo(new BitPlan.ModelId(fingerprint, "stories260K.bin"));
        assertThat(BitPlanJson.fromBytes(v1BeforeModel.getBytes(StandardCharsets.UTF_8)).model()).isNull();
        assertRejected(v1.replace("\"model\" : null,", "\"model\" : null, \"smoothing\" : null,"), "unknown field \"smoothing\"");
        String smoothQuant = SMALL.replace("\"smoothing\" : null", "\"smoothing\" : \"smoothquant\"").replace("\"alpha\" : null", "\"alpha\" : 0.5");
        assertThat(BitPlanJson.fromBytes(smoothQuant.getBytes(StandardCharsets.UTF_8)).smoothing()).isEqualTo(SmoothingRule.SMOOTHQUANT);
    }

    @Test
    void recordsTheModelAndTheSmoothingRule() {
        TensorPlan tensor = new TensorPlan("blk.0.attn_q.weight", 4, 16, new byte[] {2, 2, 1, 1}, Metric.EXACT, 0.25);
        BitPlan plan = new BitPlan(1.5, List.of(tensor), SmoothingRule.SMOOTHQUANT, new BitPlan.ModelId("ab".repeat(32), "stories260K.bin"));
        String json = new String(BitPlanJson.toBytes(plan), StandardCharsets.UTF_8);
        assertThat(json).contains("  \"smoothing\" : \"smoothquant\",\n  \"model\" : {\n    \"fingerprint\" : \"" + "ab".repeat(32)
                + "\",\n    \"name\" : \"stories260K.bin\"\n  },\n");
        assertThat(BitPlanJson.fromBytes(json.getBytes(StandardCharsets.UTF_8))).isEqualTo(plan);
        assertThat(plan.withAlpha("blk.0.attn_q.weight", 0.5).model()).isEqualTo(plan.model());
        assertThat(plan.withAlpha("blk.0.attn_q.weight", 0.5).smoothing()).isEqualTo(SmoothingRule.SMOOTHQUANT);
    }

    @Test
    void roundTripsThroughAFileWithIdenticalBytes(@TempDir Path dir) throws IOException {
        BitPlan plan = realPlan().withAlpha("layers.1.wq", 0.55);
        Path file = dir.resolve("plan.json");
        BitPlanJson.write(plan, file);
        BitPlan read = BitPlanJson.read(file);
        assertThat(read).isEqualTo(plan);
        assertThat(read.tensor("layers.1.wq").alpha()).isEqualTo(0.55);
        assertThat(read.tensor("layers.1.wk").alpha()).isNull();
        assertThat(Files.readAllBytes(file)).isEqualTo(BitPlanJson.toBytes(read));
        BitPlanJson.write(read, file); // overwrite in place
        assertThat(Files.readAllBytes(file)).isEqualTo(BitPlanJson.toBytes(plan));
        try (var listing = Files.list(dir)) {
            assertThat(listing.map(p -> p.getFileName().toString()).toList()).containsExactly("plan.json");
        }
    }

    @Test
    void planFilesGetTheModeOfAnyNewFile(@TempDir Path dir) throws IOException {
        Path plain = Files.createFile(dir.resolve("plain")), plan = dir.resolve("plan.json");
        BitPlanJson.write(new BitPlan(4, List.of(new TensorPlan("w", 2, 8, new byte[] {3, 5}, Metric.APPROX, null))), plan);
        assertThat(Files.getPosixFilePermissions(plan)).isEqualTo(Files.getPosixFilePermissions(plain));
    }

    @Test
    void theSameInputsGiveTheSameBytes() throws IOException {
        assertThat(BitPlanJson.toBytes(realPlan())).isEqualTo(BitPlanJson.toBytes(realPlan()));
        SplittableRandom random = new SplittableRandom(41);
        float[] matrix = GreedyBitAllocatorTest.randomMatrix(random, 50, 70);
        byte[] first = BitPlanJson.toBytes(GreedyBitAllocator.allocate(List.of(RelativeError.table("w", matrix, 50, 70, Metric.EXACT, null)), 4.2));
        byte[] second = BitPlanJson.toBytes(GreedyBitAllocator.allocate(List.of(RelativeError.table("w", matrix.clone(), 50, 70, Metric.EXACT, null)), 4.2));
        assertThat(second).isEqualTo(first);
    }

    @Test
    void readingRejectsInconsistentOrMalformedPlansNamingTheProblem() {
        assertRejected(SMALL.replace("\"2211\"", "\"2291\""), "blk.0.attn_q.weight", "'9' of row 2");
        assertRejected(SMALL.replace("\"2211\"", "\"221\""), "3 digits for 4 rows");
        assertRejected(SMALL.replace("\"histogram\" : [ 2, 2,", "\"histogram\" : [ 3, 1,"), "histogram [3, 1");
        assertRejected(SMALL.replace("\"averageBits\" : 1.5,\n    \"histogram\"", "\"averageBits\" : 1.25,\n    \"histogram\""), "averageBits 1.25");
        assertRejected(SMALL.replace("\"alpha\" : null", "\"alpha\" : 1.5"), "alpha 1.5 outside [0, 1]");
        assertRejected(SMALL.replace("\"metric\" : \"EXACT\"", "\"metric\" : \"MSE\""), "bit plan: tensors[0].metric: \"MSE\" is not one of [APPROX, EXACT]");
        assertRejected(SMALL.replace("\"cols\" : 16", "\"cols\" : 0"), "not positive");
        assertRejected(SMALL.replace("\"rows\" : 4", "\"rows\" : \"4\""), "bit plan: tensors[0].rows: Cannot coerce String value (\"4\") to int value");
        assertRejected(SMALL.replace("\"version\" : 3", "\"version\" : 5"), "version 5");
        assertRejected(SMALL.replace("\"version\" : 3", "\"version\" : 4"), "missing field \"wholeFile\"");
        String whole = SMALL.replace("\"version\" : 3", "\"version\" : 4").replace("  \"model\" : null,\n", "  \"model\" : null,\n  \"wholeFile\" : WHOLE,\n");
        assertThat(BitPlanJson.fromBytes(whole.replace("WHOLE", "null").getBytes(StandardCharsets.UTF_8)).wholeFile()).isNull();
        BitPlan wholeFile = BitPlanJson.fromBytes(whole.replace("WHOLE", "{ \"weights\" : 64, \"bytes\" : 40, \"float16\" : [ \"output\" ] }")
                .replace("\"budget\" : 1.5", "\"budget\" : 9.5").getBytes(StandardCharsets.UTF_8));
        assertThat(wholeFile.wholeFile()).isEqualTo(new BitPlan.WholeFile(64, 40, List.of("output")));
        assertThat(wholeFile.wholeFile().bitsPerWeight()).isEqualTo(5);
        assertThat(new String(BitPlanJson.toBytes(wholeFile), StandardCharsets.UTF_8)).contains("\"version\" : 4", "\"float16\" : [ \"output\" ]");
        assertThat(BitPlanJson.fromBytes(BitPlanJson.toBytes(wholeFile))).isEqualTo(wholeFile);
        assertRejected(whole.replace("WHOLE", "{ \"weights\" : 0, \"bytes\" : 40, \"float16\" : [ ] }"), "wholeFile: a whole-file budget needs positive weights");
        assertRejected(whole.replace("WHOLE", "{ \"weights\" : 64, \"bytes\" : 40, \"float16\" : [ ] }").replace("\"budget\" : 1.5", "\"budget\" : 17.0"),
                "whole-file budget 17.0 bits per weight is outside [1, 16]");
        assertRejected(SMALL.replace("\"inputClip\" : null", "\"inputClip\" : 1.5"), "input clip 1.5 outside (0, 1]");
        assertRejected(SMALL.replace("\"smoothing\" : null", "\"smoothing\" : \"awq\""), "smoothing rule \"awq\"");
        assertRejected(SMALL.replace("\"smoothing\" : null", "\"smoothing\" : \"edgeflow\""), "no tensor has an α");
        assertRejected(SMALL.replace("\"alpha\" : null", "\"alpha\" : 0.5"), "α but no smoothing rule");
        assertRejected(SMALL.replace("jquant-bitplan", "other"), "not a bit plan (format is \"other\", expected \"jquant-bitplan\")");
        assertRejected(SMALL.replace("\"budget\" : 1.5", "\"budget\" : 9.0"), "budget 9.0 bits per weight is outside [1, 8]");
        assertRejected(SMALL.replace("\"version\" : 3,", "\"version\" : 3, \"extra\" : 0,"), "unknown field \"extra\"");
        assertRejected(SMALL.replace("\"alpha\" : null,", ""), "bit plan: tensors[0]: missing field \"alpha\"");
        assertRejected(SMALL.replace("\"cols\" : 16", "\"cols\" : 16.5"), "bit plan: tensors[0].cols: Cannot coerce Floating-point value (16.5) to int value");
        assertRejected(SMALL.replace("\"name\" : \"blk.0.attn_q.weight\"", "\"name\" : 7"), "bit plan: tensors[0].name: Cannot coerce Integer value (7) to String value");
        assertRejected(SMALL.replace("[ 2, 2, 0, 0, 0, 0, 0, 0 ]", "[ 2, 2, 0, 0, 0, 0, 0 ]"), "histogram [2, 2, 0, 0, 0, 0, 0] does not match");
        assertRejected("[]", "bit plan: expected a JSON object");
        assertRejected(SMALL.replace("  \"model\" : null,\n", ""), "missing field \"model\"");
        assertRejected(SMALL.replace("  \"smoothing\" : null,\n", ""), "missing field \"smoothing\"");
        assertRejected(SMALL.replace("\"version\" : 3,", "\"version\" : 3, \"version\" : 3,"), "Duplicate field");
        assertRejected("{\"format\":\"jquant-bitplan\",\"version\":2,\"budget\":2,\"averageBits\":2,\"smoothing\":null,\"model\":null,\"tensors\":[]}", "at least one tensor");
        assertRejected(SMALL.substring(0, 60), "bit plan: not valid JSON");
        String twice = SMALL.replace("} ]\n}", "}, " + SMALL.substring(SMALL.indexOf("{\n    \"name\""), SMALL.indexOf("} ]")) + "} ]\n}");
        assertRejected(twice, "appears twice");
    }

    private static void assertRejected(String json, String... messageParts) {
        assertThatThrownBy(() -> BitPlanJson.fromBytes(json.getBytes(StandardCharsets.UTF_8)))
                .isInstanceOf(IllegalArgumentException.class).message().contains(messageParts);
    }
}
