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
