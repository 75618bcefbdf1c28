package jquant.cli;

import jquant.testsupport.SharedFiles;
import jquant.testsupport.Slow;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * {@code jquant pack} in a JVM of its own, stopped while it writes: SIGINT and SIGTERM leave nothing
 * beside the output (the shutdown hook), and the temporary file a SIGKILL leaves is removed by the
 * next run that writes the same output.
 */
@Slow
class InterruptedRunTest {
    @TempDir
    static Path work;
    static Path plan;

    @BeforeAll
    static void plan() {
        plan = work.resolve("plan.json");
        CliTest.Result r = CliTest.run("allocate", model().toString(), "--budget", "4", "--quiet", "--out", plan.toString());
        assertThat(r.code()).as(r.err()).isZero();
    }

    static Path model() {
        return SharedFiles.model("tinystories-6M/tinystories-6M.bin");
    }

    /** {@code jquant pack} of tinystories-6M into {@code out}, as a process of its own (logs beside the plan, not in {@code out}). */
    private static Process pack(Path out) throws IOException {
        String java = ProcessHandle.current().info().command().orElseThrow();
        List<String> command = List.of(java, "--add-modules", "jdk.incubator.vector", "--enable-native-access=ALL-UNNAMED",
                "-cp", System.getProperty("java.class.path"), Main.class.getName(), "pack", model().toString(),
                "--tokenizer", SharedFiles.model("tok512.bin").toString(), "--plan", plan.toString(), "--quiet", "--out", out.resolve("m.jqw").toString());
        return new ProcessBuilder(command).redirectOutput(work.resolve("pack.out").toFile()).redirectError(work.resolve("pack.err").toFile()).start();
    }

    /** Waits until the run's temporary file appears (as soon as the packer opens its output), while the run lasts. */
    private static Optional<Path> tempFileOf(Process p, Path out) throws Exception {
        while (p.isAlive()) {
            try (var files = Files.list(out)) {
                Optional<Path> tmp = files.filter(f -> f.getFileName().toString().matches("\\.m\\.jqw\\.[0-9a-f-]{36}\\.tmp")).findFirst();
                if (tmp.isPresent()) return tmp;
            }
            Thread.sleep(5);
        }
        return Optional.empty();
    }

    /** Whether {@code p} was started with {@code signal} ignored (a background job of a non-interactive shell ignores SIGINT). */
    private static boolean ignores(Process p, String signal) throws IOException {
        int number = signal.equals("INT") ? 2 : 15;
        for (String line : Files.readAllLines(Path.of("/proc", Long.toString(p.pid()), "status"))) {
            if (line.startsWith("SigIgn:")) return (Long.parseUnsignedLong(line.substring(7).strip(), 16) >>> (number - 1) & 1) == 1;
        }
        return false;
    }

    /**
     * The temporary file of a pack run killed (SIGKILL) while it wrote: the run is stopped (SIGSTOP) as soon
     * as its file appears, so that it cannot finish before the kill; a run that finished first is run again.
     */
    private static Path killedWhileWriting(Path out) throws Exception {
        for (int attempt = 0; attempt < 5; attempt++) {
            Process p = pack(out);
            Optional<Path> tmp = tempFileOf(p, out);
            if (tmp.isPresent()) {
                new ProcessBuilder("kill", "-STOP", Long.toString(p.pid())).start().waitFor();
                if (p.isAlive() && Files.exists(tmp.get())) {
                    p.destroyForcibly().waitFor();
                    return tmp.get();
                }
            }
            p.destroyForcibly().waitFor();   // a run stopped just after its rename would never end by itself
            Files.deleteIfExists(out.resolve("m.jqw"));
        }
        throw new AssertionError("five pack runs finished before they could be stopped");
    }

    private static List<Path> listing(Path dir) throws IOException {
        try (var files = Files.list(dir)) {
            return files.toList();
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"INT", "TERM"})
    void anInterruptedRunLeavesNothingBesideItsOutput(String signal) throws Exception {
        Path out = Files.createDirectory(work.resolve("out-" + signal));
        Process p = pack(out);
        if (ignores(p, signal)) {
            p.destroyForcibly().waitFor();
            assumeTrue(false, "SIG" + signal + " is ignored in this environment (inherited from the shell that started the build); the JVM cannot be interrupted by it");
        }
        Optional<Path> tmp = tempFileOf(p, out);
        assertThat(tmp).as("the run's temporary file, seen while it ran").isPresent();
        assertThat(new ProcessBuilder("kill", "-" + signal, Long.toString(p.pid())).start().waitFor()).isZero();
        assertThat(p.waitFor()).as("exit code after SIG" + signal).isNotZero();
        assertThat(listing(out)).isEmpty();
    }

    @Test
    void theNextRunRemovesWhatAKilledRunLeft() throws Exception {
        Path out = Files.createDirectory(work.resolve("out-KILL"));
        Path unrelated = Files.writeString(out.resolve(".m.jqw.backup.tmp"), "not ours");
        Path left = killedWhileWriting(out);
        assertThat(left).as("what SIGKILL leaves").exists();
        Process next = pack(out);
        assertThat(next.waitFor()).as(Files.readString(work.resolve("pack.err"))).isZero();
        assertThat(listing(out)).containsExactlyInAnyOrder(out.resolve("m.jqw"), unrelated);
    }
}
