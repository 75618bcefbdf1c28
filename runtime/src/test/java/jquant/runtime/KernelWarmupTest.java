package jquant.runtime;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatCode;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import jquant.formats.DType;
import jquant.runtime.ternary.TernaryKernels;
import jquant.testsupport.Slow;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * What the warm-up is for: once it has run, C2 has compiled the kernels it warms (and under
 * {@code jquant.kernelWarmup=dense-rows} only the dense row kernel), each in a JVM of its own where
 * nothing else ran them ({@link KernelWarmupProbe}); and a warm-up whose model was closed stops quietly.
 * (The ternary warm-up once gave the decode kernel a quarter of the calls it needed: it was never
 * compiled.)
 */
class KernelWarmupTest {

    /**
     * The methods C2 compiled at its top tier in a fresh JVM that ran {@code warmUp}, waiting for {@code awaited}.
     * HotSpot drops a queued compilation whose method has not run for {@code TieredCompileTaskTimeout} (50 ms),
     * unless it ran 50,000 times: on a busy host whose C2 queue outlasts the warm-up, a kernel's task can be dropped
     * (a model's next calls queue it again), the likely cause of a CI run where the ternary prefill kernel was never
     * compiled. The probe keeps queued tasks for as long as it waits, so what is tested is that the warm-up makes
     * the kernels hot enough, not the host's load.
     */
    private static List<String> compiledAfter(Path dir, List<String> jvmOptions, String warmUp, String... awaited) throws Exception {
        List<String> command = new ArrayList<>(List.of(ProcessHandle.current().info().command().orElseThrow(),
                "--add-modules", "jdk.incubator.vector", "--enable-native-access=ALL-UNNAMED", "-XX:TieredCompileTaskTimeout=120000"));
        command.addAll(jvmOptions);
        command.addAll(List.of("-cp", System.getProperty("java.class.path"), KernelWarmupProbe.class.getName(), warmUp));
        command.addAll(List.of(awaited));
        Path out = dir.resolve(warmUp + ".txt"), err = dir.resolve(warmUp + ".err");
        Process p = new ProcessBuilder(command).redirectOutput(out.toFile()).redirectError(err.toFile()).start();
        assertThat(p.waitFor()).as(Files.readString(err)).isZero();
        return Files.readAllLines(out);
    }

    @Test
    void theSharedWarmUpGetsC2ToCompileTheKernelsEveryModelUses(@TempDir Path dir) throws Exception {
        assertThat(compiledAfter(dir, List.of(), "shared", "VectorMatmulKernels.rowsF16", "VectorMatmulKernels.tile",
                "VectorMatmulKernels.f16ToFloats", "VectorKernels.rmsnorm", "VectorKernels.softmax"))
                .contains("VectorMatmulKernels.rowsF16", "VectorMatmulKernels.tile", "VectorMatmulKernels.f16ToFloats",
                        "VectorKernels.rmsnorm", "VectorKernels.softmax");
    }

    @Test
    void underDenseRowsOnlyTheRowKernelIsCompiled(@TempDir Path dir) throws Exception {
        assertThat(compiledAfter(dir, List.of("-Djquant.kernelWarmup=dense-rows"), "shared", "VectorMatmulKernels.rowsF16"))
                .contains("VectorMatmulKernels.rowsF16").doesNotContain("VectorMatmulKernels.tile", "VectorKernels.rmsnorm");
    }

    /** The decode and prefill kernels (their hot loops) of each type the ternary kernels serve. */
    private static final Map<DType, List<String>> TERNARY_KERNELS = Map.of(
            DType.T2P, List.of("T2pMatrix.pairSums", "T2pMatrix.tileSums"),
            DType.TQ2_0, List.of("StockMatrix.pairSums", "StockMatrix.tileSums"),
            DType.PQ2_0, List.of("StockMatrix.pairSums", "StockMatrix.tileSums"),
            DType.PTQ1_0, List.of("Ptq1Matrix.blockSums"));

    static Stream<DType> ternaryTypes() {
        return TernaryKernels.types().stream();
    }

    @Slow
    @ParameterizedTest(name = "{0}")
    @MethodSource("ternaryTypes")
    void aTernaryWarmUpGetsItsDecodeAndPrefillKernelsCompiled(DType type, @TempDir Path dir) throws Exception {
        assertThat(TERNARY_KERNELS).as("the kernels of every ternary type").containsKey(type);
        List<String> kernels = TERNARY_KERNELS.get(type);
        assertThat(compiledAfter(dir, List.of(), type.name(), kernels.toArray(String[]::new))).containsAll(kernels);
    }

    @Test
    void aWarmUpWhoseModelWasClosedStopsQuietly() {
        Arena arena = Arena.ofShared();
        MemorySegment stored = arena.allocate(1 << 16, 64);
        arena.close();
        assertThatCode(() -> KernelWarmup.warmShared(stored)).doesNotThrowAnyException();
        assertThatCode(() -> KernelWarmup.warmDense(DType.BF16, stored)).doesNotThrowAnyException();
    }
}
