package jquant.examples;

import jquant.formats.Checkpoint;
import jquant.formats.Checkpoints;
import jquant.runtime.Generation;
import jquant.runtime.LlamaModel;
import jquant.runtime.Perplexity;
import jquant.runtime.Sampler;
import jquant.runtime.Tokenizer;

import java.nio.file.Files;
import java.nio.file.Path;

/**
 * The jquant Java API in one page: open any checkpoint, run it, and measure its perplexity.
 *
 * <pre>
 * java --add-modules jdk.incubator.vector --enable-native-access=ALL-UNNAMED \
 *     -cp "examples/target/classes:$(cat examples/target/classpath.txt)" \
 *     jquant.examples.GenerateAndEvaluate models/stories260K/stories260K.bin models/stories260K/tinystories-eval.txt
 * </pre>
 */
public final class GenerateAndEvaluate {
    private GenerateAndEvaluate() {}

    public static void main(String[] args) throws Exception {
        if (args.length != 2) {
            System.err.println("usage: GenerateAndEvaluate <checkpoint> <text file>");
            System.exit(2);
        }
        try (Checkpoint checkpoint = Checkpoints.open(Path.of(args[0]))) {
            System.out.println(checkpoint.format() + ": " + checkpoint.config());
            LlamaModel model = LlamaModel.load(checkpoint);
            Tokenizer tokenizer = Tokenizer.of(checkpoint.vocabulary().orElseThrow());

            int[] prompt = tokenizer.encode("Once upon a time");
            int[] story = Generation.generate(model, prompt, 60, Sampler.greedy(), tokenizer.eos(), token -> {});
            System.out.println(tokenizer.decode(prompt) + tokenizer.decode(story));

            Perplexity.Result r = new Perplexity(256).evaluate(model, tokenizer, Files.readString(Path.of(args[1])), null);
            System.out.printf("perplexity %.4f ± %.5f over %,d scored tokens%n", r.perplexity(), r.stderr(), r.scored());
        }
    }
}
