package jquant.cli;

import java.nio.file.Path;
import picocli.CommandLine.Option;

/** {@code --out}: the file a command writes (a mixin, the same in every command that writes one file). */
final class OutputFile {
    @Option(names = "--out", required = true, paramLabel = "<file>",
            description = "File to write; it appears only when complete, and may not be one of the inputs.")
    Path path;
}
