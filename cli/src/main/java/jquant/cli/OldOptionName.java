package jquant.cli;

import picocli.CommandLine.Model.CommandSpec;

/**
 * A renamed option's old name, still accepted so that scripts keep working: a hidden option whose setter
 * sets the new one and says on stderr, once per use, what the name is now (README lists the renames).
 */
final class OldOptionName {
    private OldOptionName() {}

    static void used(CommandSpec spec, String old, String now) {
        spec.commandLine().getErr().println("jquant: " + old + " is now " + now + " (the old name still works)");
        spec.commandLine().getErr().flush();
    }
}
