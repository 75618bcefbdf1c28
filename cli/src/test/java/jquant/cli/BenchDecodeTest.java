package jquant.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import jquant.testsupport.SharedFiles;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class BenchDecodeTest {

    /**
     * {@code bench decode --against float}: each thread count's line gives both loads' ms/token and the first's speed as the
     * quotient of the two, to the printed digits. In a process of its own: the benches print to the process's standard output.
     */
    @Test
    void againstPrintsBothSpeedsAndTheirQuotient(@TempDir Path dir) throws Exception {
        String model = SharedFiles.model("stories260K.bin").toString();
        CliTest.Result r = inProcess(dir, "bench", "decode", model, "--against", "float", "--thread-counts", "1,2", "--tokens", "6", "--warmup", "2");
        assertThat(r.code()).as(r.err()).isZero();
        assertThat(r.out()).contains("token by token against a second load on float").contains("float ms");
        List<String[]> rows = r.out().lines().map(String::trim).filter(l -> l.matches("[12] .*")).map(l -> l.split("\\s+")).toList();
        assertThat(rows).as(r.out()).hasSize(2);
        for (String[] row : rows) {
            assertThat(row).as(Arrays.toString(row)).hasSize(7);
            double ms = Double.parseDouble(row[2]), against = Double.parseDouble(row[5]), speed = Double.parseDouble(row[6].replace("x", ""));
            assertThat(ms).isPositive();
            assertThat(against).isPositive();
            // the quotient of the unrounded times, within what rounding each to two decimals allows
            assertThat(speed).isBetween((against - 0.005) / (ms + 0.005) - 0.0005, (against + 0.005) / (ms - 0.005) + 0.0005);
        }
    }

    /** An implementation is the process's, not a second load's: {@code --against java} is a usage error. */
    @Test
    void againstTakesOnlyALayout() {
        String model = SharedFiles.model("stories260K.bin").toString();
        CliTest.Result r = CliTest.run("bench", "decode", model, "--against", "java");
        assertThat(r.code()).isEqualTo(2);
        assertThat(r.err()).contains("'java' is not one of auto, stored, t2p, float");
    }

    /**
     * {@code --depth N}: the timed steps follow a prompt of N tokens; a depth the model's context cannot hold with the steps is
     * refused naming the file and the positions, a depth below one is a usage error.
     */
    @Test
    void depthSetsThePromptAndMustFitTheContext(@TempDir Path dir) throws Exception {
        String model = SharedFiles.model("stories260K.bin").toString();
        CliTest.Result r = inProcess(dir, "bench", "decode", model, "--depth", "100", "--thread-counts", "1", "--tokens", "4", "--warmup", "1");
        assertThat(r.code()).as(r.err()).isZero();
        assertThat(r.out()).contains("prompt 100 tokens, 4 timed steps after 1");
        assertThat(r.out().lines().map(String::trim).filter(l -> l.startsWith("1 ")).count()).as(r.out()).isEqualTo(1);

        CliTest.Result tooDeep = inProcess(dir, "bench", "decode", model, "--depth", "510", "--thread-counts", "1", "--tokens", "4");
        assertThat(tooDeep.code()).isNotZero();
        assertThat(tooDeep.err()).contains(model).contains("need 522 positions; the model's context holds 512");

        CliTest.Result zero = inProcess(dir, "bench", "decode", model, "--depth", "0");
        assertThat(zero.code()).isEqualTo(2);
        assertThat(zero.err()).contains("--depth must be ≥ 1, got 0");
    }

    private static CliTest.Result inProcess(Path dir, String... args) throws Exception {
        String java = ProcessHandle.current().info().command().orElseThrow();
        List<String> command = new ArrayList<>(List.of(java, "--add-modules", "jdk.incubator.vector", "--enable-native-access=ALL-UNNAMED",
                "-cp", System.getProperty("java.class.path"), Main.class.getName()));
        command.addAll(List.of(args));
        Path out = dir.resolve("out.txt"), err = dir.resolve("err.txt");
        Process p = new ProcessBuilder(command).redirectOutput(out.toFile()).redirectError(err.toFile()).start();
        int code = p.waitFor();
        return new CliTest.Result(code, Files.readString(out), Files.readString(err));
    }
}
