package jquant.runtime.nativelib;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assumptions.assumeThat;

import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import jquant.formats.DType;
import jquant.core.WorkerPool;
import jquant.runtime.ternary.NativeTernaryMatrix;
import jquant.runtime.ternary.T2pMatrix;
import jquant.runtime.ternary.TernaryKernels;
import jquant.runtime.ternary.TernaryMatrix;
import org.junit.jupiter.api.Test;

/**
 * Where the native kernels come from and what runs without them. {@code ./run-tests} runs this class
 * twice: as built (the library present wherever a C compiler is, unless the build skipped it), and
 * again with {@code jquant.native.library} pointing where there is no library, as on a machine
 * without a compiler — then the Java kernels must run and {@code --kernels native} must say why not.
 */
class NativeLibraryTest {

    /** Whether this JVM was started to look for the library where there is none. */
    private static boolean absentByRequest() {
        String path = System.getProperty("jquant.native.library");
        return path != null && !Files.exists(Path.of(path));
    }

    private static boolean compilerOnPath() {
        String cc = System.getenv().getOrDefault("CC", "cc");
        for (String dir : System.getenv().getOrDefault("PATH", "").split(java.io.File.pathSeparator)) {
            if (!dir.isEmpty() && Files.isExecutable(Path.of(dir, cc))) return true;
        }
        return false;
    }

    @Test
    void theBuildBundlesTheLibraryWhereItHasACompiler() {
        assumeThat(absentByRequest()).as("run without the library").isFalse();
        assumeThat(Boolean.getBoolean("jquant.native.skip")).as("native build skipped").isFalse();
        assumeThat(compilerOnPath()).as("a C compiler on the PATH").isTrue();
        assertThat(NativeLibrary.get().library()).as(NativeLibrary.get().reason()).isPresent();
        String arch = System.getProperty("os.arch");
        if (arch.equals("amd64") || arch.equals("x86_64")) {
            // every x86-64 CI machine of the last decade has AVX2; the status names the chosen instruction set
            assertThat(NativeKernels.supported()).extracting(NativeKernels::isa).contains(NativeIsa.AVX2);
            assertThat(NativeKernels.status()).contains(NativeKernels.best().orElseThrow().isa().suffix);
        }
    }

    @Test
    void withoutTheLibraryTheJavaKernelsRunAndNativeIsRefusedSayingWhy() {
        assumeThat(absentByRequest()).as("run without the library").isTrue();
        assertThat(NativeLibrary.get().library()).isEmpty();
        assertThat(NativeLibrary.get().reason()).contains("no native library at");
        assertThat(NativeKernels.supported()).isEmpty();
        assertThat(KernelSource.kernels()).isEmpty();
        assertThat(KernelSource.describe()).startsWith("Java kernels (no native library at");
        assertThatThrownBy(() -> KernelSource.use(KernelSource.NATIVE)).hasMessageContaining("native kernels unavailable: no native library at");
        try (WorkerPool one = new WorkerPool(1)) {
            TernaryMatrix m = TernaryKernels.on(DType.T2P, MemorySegment.ofArray(new byte[136]), 4, 128, one);
            assertThat(m).isInstanceOf(T2pMatrix.class);
        }
    }

    @Test
    void aMissingFileIsAReasonNotAnError() {
        NativeLibrary.Loaded l = NativeLibrary.loadFile(Path.of("/nonexistent/libjqk.so"));
        assertThat(l.library()).isEmpty();
        assertThat(l.reason()).isEqualTo("no native library at /nonexistent/libjqk.so");
        assertThat(NativeLibrary.load("/jquant/runtime/native/none/libjqk.so").reason()).contains("not built");
    }

    @Test
    void theChoiceDecidesWhichMatrixIsBuilt() {
        assumeThat(NativeKernels.best()).as("native kernels").isPresent();
        KernelSource before = KernelSource.chosen();
        try (WorkerPool one = new WorkerPool(1)) {
            MemorySegment block = MemorySegment.ofArray(new byte[136]);
            KernelSource.use(KernelSource.JAVA);
            assertThat(TernaryKernels.on(DType.T2P, block, 4, 128, one)).isInstanceOf(T2pMatrix.class);
            assertThat(KernelSource.describe()).isEqualTo("Java kernels (--kernels java)");
            KernelSource.use(KernelSource.NATIVE);
            assertThat(TernaryKernels.on(DType.T2P, block, 4, 128, one)).isInstanceOf(NativeTernaryMatrix.class);
            KernelSource.use(KernelSource.AUTO);
            assertThat(TernaryKernels.on(DType.T2P, block, 4, 128, one)).isInstanceOf(NativeTernaryMatrix.class);
        } finally {
            KernelSource.use(before);
        }
    }
}
