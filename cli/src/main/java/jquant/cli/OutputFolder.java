package jquant.cli;

import java.nio.file.Path;
import picocli.CommandLine.Option;

/** {@code --out}: the folder a command writes into (a mixin, the same in every command that writes several files). */
final class OutputFolder {
    @Option(names = "--out", required = true, paramLabel = "<dir>", description = "Folder to write into.")
    Path path;
}
