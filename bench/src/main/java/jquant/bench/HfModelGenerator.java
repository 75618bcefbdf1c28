package jquant.bench;

import jquant.formats.Architecture;
import jquant.formats.DType;
import jquant.formats.ModelConfig;
import jquant.formats.synthetic.SyntheticHfFolder;

import java.nio.file.Path;

/**
 * Writes a full-size Hugging Face folder of a seeded random model, for the end-to-end runs of issue 10
 * (calibrate → allocate → pack → eval, convert) at real shapes: {@code llama-3.2-1b} (Llama-3.2-1B's
 * config: dim 2048, 16 layers, 32/8 heads of 64, hidden 8192, vocab 128,256, tied, rope_scaling llama3
 * 32/1/4/8192, theta 500,000) or {@code qwen2.5-0.5b} (Qwen2.5-0.5B's: dim 896, 24 layers, 14/2 heads of
 * 64, hidden 4864, vocab 151,936, q/k/v biases, tied, theta 10^6), BF16 as published, with the tokenizer
 * files of a folder (Llama 3's tokenizer.json; Qwen2's vocab_size pads it).
 *
 * <pre>java --add-modules jdk.incubator.vector -cp cli/target/jquant.jar jquant.bench.HfModelGenerator SHAPE OUT_DIR TOKENIZER_DIR [SEED]</pre>
 */
public final class HfModelGenerator {
    private HfModelGenerator() {}

    public static void main(String[] args) throws Exception {
        if (args.length < 3 || args.length > 4) {
            System.err.println("usage: HfModelGenerator llama-3.2-1b|qwen2.5-0.5b OUT_DIR TOKENIZER_DIR [SEED]");
            System.exit(2);
        }
        long seed = args.length == 4 ? Long.parseLong(args[3]) : 1;
        Path out = Path.of(args[1]), tokenizer = Path.of(args[2]);
        long t0 = System.nanoTime();
        switch (args[0]) {
            case "llama-3.2-1b" -> SyntheticHfFolder.write(out,
                    new ModelConfig(Architecture.LLAMA, 2048, 8192, 16, 32, 8, 64, 128256, 131072, 500000f, null, 1e-5f, true),
                    new SyntheticHfFolder.Llama3Scaling(32, 1, 4, 8192), seed, DType.BF16, tokenizer, 128000, 128001);
            case "qwen2.5-0.5b" -> SyntheticHfFolder.write(out,
                    new ModelConfig(Architecture.QWEN2, 896, 4864, 24, 14, 2, 64, 151936, 32768, 1000000f, null, 1e-6f, true),
                    null, seed, DType.BF16, tokenizer, 128000, 128001);
            default -> {
                System.err.println("unknown shape " + args[0] + " (llama-3.2-1b, qwen2.5-0.5b)");
                System.exit(2);
            }
        }
        System.out.printf("wrote %s in %.1f s%n", out, (System.nanoTime() - t0) / 1e9);
    }
}
