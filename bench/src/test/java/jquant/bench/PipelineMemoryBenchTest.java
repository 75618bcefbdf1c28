package jquant.bench;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;

import static org.assertj.core.api.Assertions.assertThat;

class PipelineMemoryBenchTest {

    @Test
    void liveHeapIsReadFromARealCollectorLog(@TempDir Path dir) throws Exception {
        // A JVM that holds 64 MiB across a full collection: its log's largest after-collection occupancy covers it.
        Path program = Files.writeString(dir.resolve("Hold.java"), """
                public class Hold {
                    public static void main(String[] a) {
                        byte[] held = new byte[64 << 20];
                        System.gc();
                        System.out.println(held.length);
                    }
                }
                """);
        Path log = dir.resolve("gc.log");
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        Process p = new ProcessBuilder(java, "-XX:+UseG1GC", "-Xmx256m", "-Xlog:gc:file=" + log, program.toString())
                .redirectErrorStream(true).start();
        p.getInputStream().readAllBytes();
        assertThat(p.waitFor()).isZero();

        assertThat(PipelineMemoryBench.liveKb(log)).isBetween(64L << 10, 128L << 10);
        assertThat(PipelineMemoryBench.liveKb(dir.resolve("absent.log"))).isEqualTo(-1);
    }
}
