package jquant.examples;

import jquant.testsupport.Slow;
import org.junit.jupiter.api.Test;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * docs/api.md stays true: its code is the example's code, and the output it shows is what the example
 * prints (it once showed 442,098 bytes and perplexity 4.0572 while the example printed 377,559 and 4.0801).
 */
class ApiDocTest {
    private static final Path DOC = Path.of("../docs/api.md"), EXAMPLE = Path.of("src/main/java/jquant/examples/QuantizePipeline.java");

    /** Every line of the doc's Java block is a line of the example, in the same order. */
    @Test
    void theDocumentedCodeIsTheExamplesCode() throws IOException {
        List<String> documented = block(Files.readAllLines(DOC), "```java").stream().map(String::strip).filter(l -> !l.isEmpty()).toList();
        List<String> source = Files.readAllLines(EXAMPLE).stream().map(String::strip).toList();
        assertThat(documented).isNotEmpty();
        assertThat(source).containsSubsequence(documented);
    }

    /** The example run as the doc says, on the model shipped in models/, prints exactly the block the doc shows. */
    @Test
    @Slow
    void theExamplePrintsWhatTheDocShows() throws Exception {
        List<String> lines = Files.readAllLines(DOC);
        int at = 0;
        while (!lines.get(at).startsWith("It prints the packed file")) at++;
        List<String> shown = block(lines.subList(at, lines.size()), "```");
        PrintStream stdout = System.out;
        ByteArrayOutputStream printed = new ByteArrayOutputStream();
        System.setOut(new PrintStream(printed, true, StandardCharsets.UTF_8));
        try {
            // Relative, as in the doc's command, so the printed path is the documented one.
            QuantizePipeline.main(new String[] {"../models/stories260K", "target/pipeline"});
        } finally {
            System.setOut(stdout);
        }
        assertThat(printed.toString(StandardCharsets.UTF_8).lines().toList()).isEqualTo(shown);
    }

    /** The lines of the first fenced block that opens with {@code fence}. */
    private static List<String> block(List<String> lines, String fence) {
        List<String> block = new ArrayList<>();
        boolean inside = false;
        for (String line : lines) {
            if (!inside && line.equals(fence)) inside = true;
            else if (inside && line.equals("```")) return block;
            else if (inside) block.add(line);
        }
        throw new IllegalStateException("no " + fence + " block in " + DOC);
    }
}
