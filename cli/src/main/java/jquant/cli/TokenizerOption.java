package jquant.cli;

import java.nio.file.Path;
import picocli.CommandLine.Option;

/** {@code --tokenizer}: the tokenizer of a llama2.c model (a mixin, the same in every command). */
final class TokenizerOption {
    @Option(names = "--tokenizer", paramLabel = "<file>",
            description = "llama2.c tokenizer.bin for a .bin model (default: tokenizer.bin or tok<vocab>.bin beside it).")
    Path path;
}
