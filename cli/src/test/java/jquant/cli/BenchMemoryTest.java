package jquant.cli;

import jquant.testsupport.SharedFiles;
import jquant.testsupport.Slow;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;

import static org.assertj.core.api.Assertions.assertThat;

@Slow
class BenchMemoryTest {

    /** The five steps run as fresh processes on a real model and leave what each writes; a second model is compared step by step. */
    @Test
    void runsThePipelineStepsInFreshProcesses(@TempDir Path dir) throws Exception {
        Path model = SharedFiles.model("stories260K-f32.gguf");
        Path text = Path.of(System.getProperty("jquant.root", "..")).resolve("models/stories260K/tinystories-eval.txt");
        CliTest.Result r = CliTest.run("bench", "memory", model.toString(), model.toString(), "--data", text.toString(), "--tokens", "256",
                "--out", dir.resolve("out").toString());
        assertThat(r.code()).as(r.err()).isZero();
        for (String m : new String[] {"model-0", "model-1"}) {
            assertThat(dir.resolve("out").resolve(m).resolve("stats.gguf")).isRegularFile();
            assertThat(dir.resolve("out").resolve(m).resolve("plan.json")).isRegularFile();
            assertThat(Files.size(dir.resolve("out").resolve(m).resolve("model.jqw"))).isPositive();
        }
        assertThat(CliTest.run("bench", "memory", model.toString(), "--data", text.toString(), "--tokens", "1", "--out", dir.resolve("x").toString()).code())
                .isEqualTo(2);
    }
}
