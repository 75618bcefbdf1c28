package jquant.cli;

import java.nio.file.Path;
import picocli.CommandLine.Parameters;

/** {@code <model>}: the model a command reads, its first parameter (a mixin, the same in every command). */
final class ModelArgument {
    @Parameters(index = "0", paramLabel = "<model>",
            description = "llama2.c .bin, GGUF file, or Hugging Face folder / .safetensors (and a jquant .jqw where the command runs a model).")
    Path path;
}
