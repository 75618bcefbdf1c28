package jquant.bench;

import java.nio.file.Path;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/** Two copies of this build, each in its own class loader, decode the shipped stories260K side by side. */
class SideBySideTest {

    @Test
    void twoLoadersOfTheSameBuildDecodeTheSameModelInTurn() throws Exception {
        Path model = Path.of("..", "models", "stories260K", "stories260K.bin");
        assertThat(model).exists();
        String classPath = System.getProperty("java.class.path");
        SideBySide.Result r = SideBySide.compare(classPath, classPath, model.toString(), 1, 4, 3, "weight-only");
        assertThat(r.baselineMs()).hasSize(3);
        assertThat(r.candidateMs()).hasSize(3);
        for (int i = 0; i < 3; i++) {
            assertThat(r.baselineMs()[i]).isPositive().isFinite();
            assertThat(r.candidateMs()[i]).isPositive().isFinite();
            assertThat(r.ratios()[i]).isEqualTo(r.baselineMs()[i] / r.candidateMs()[i]);
        }
    }
}
