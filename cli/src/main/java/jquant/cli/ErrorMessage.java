package jquant.cli;

import jquant.core.Memory;
import jquant.formats.CheckpointException;
import jquant.formats.InputFiles;
import picocli.CommandLine;
import picocli.CommandLine.Model.ArgSpec;

import java.io.UncheckedIOException;
import java.nio.file.FileSystemException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.regex.Pattern;

/**
 * The one line a failed run prints after {@code jquant: }: {@code <file>: <reason>}, the reason in
 * words. Readers and writers already name their file ({@link CheckpointException}, {@link
 * FileSystemException}); a reason that names none is about the run's main input, which is put first.
 * Java class names (a parser's {@code com.fasterxml….JsonParseException: } inside a message) are left out.
 */
final class ErrorMessage {
    private static final Pattern CLASS_NAME = Pattern.compile("\\b(?:[a-z_][a-z0-9_]*\\.)+[A-Z]\\w*(?:Exception|Error)(?::\\s*|\\b)");
    private static final Pattern FILE_FIRST = Pattern.compile("^[^\\s:][^\\s]*: .*", Pattern.DOTALL);

    private ErrorMessage() {}

    static String of(Throwable ex, CommandLine cmd) {
        if (ex instanceof UncheckedIOException u && u.getCause() != null) ex = u.getCause();
        String reason = withoutClassNames(reason(ex));
        if (namesFile(reason, cmd)) return reason;
        Path input = mainInput(cmd);
        return input == null ? reason : input + ": " + reason;
    }

    /** {@code message} on one line, without the Java class names a library put in it. */
    static String withoutClassNames(String message) {
        return Main.oneLine(CLASS_NAME.matcher(message == null ? "" : message).replaceAll(""));
    }

    private static String reason(Throwable ex) {
        if (ex instanceof FileSystemException f && f.getFile() != null) {
            return f.getFile() + ": " + InputFiles.reason(f) + (f.getOtherFile() != null ? " (" + f.getOtherFile() + ")" : "");
        }
        if (ex instanceof OutOfMemoryError) {
            return "out of memory: the JVM's heap of " + Memory.format(Memory.heap()) + " is not enough for this run; give it more with "
                    + Memory.JAVA_OPTS + "=-Xmx…";
        }
        if (ex instanceof StackOverflowError) return "input nested too deeply to process";
        String m = ex.getMessage();
        if (m == null || m.isBlank()) return "internal error; run again with --verbose for the details";
        return m;
    }

    /**
     * Whether {@code message} starts with a file: one of the run's paths, a path with a folder in it, or
     * an existing file (a tensor name such as {@code blk.0.attn_q.weight} is none of these).
     */
    private static boolean namesFile(String message, CommandLine cmd) {
        for (ArgSpec arg : cmd.getParseResult() == null ? java.util.List.<ArgSpec>of() : cmd.getParseResult().matchedArgs()) {
            Object v = arg.getValue();
            if (v instanceof Path p && message.startsWith(p + ":")) return true;
        }
        if (!FILE_FIRST.matcher(message).matches()) return false;
        String first = message.substring(0, message.indexOf(": "));
        try {
            return first.contains("/") || Files.exists(Path.of(first));
        } catch (java.nio.file.InvalidPathException e) {
            return false;
        }
    }

    /** The command's first positional file (the model), or its first file option. */
    private static Path mainInput(CommandLine cmd) {
        for (ArgSpec arg : cmd.getCommandSpec().positionalParameters()) {
            Object v = arg.getValue();
            if (v instanceof Path p) return p;
            if (v instanceof java.util.List<?> l && !l.isEmpty() && l.getFirst() instanceof Path p) return p;
        }
        for (ArgSpec arg : cmd.getCommandSpec().options()) {
            if (arg.getValue() instanceof Path p) return p;
        }
        return null;
    }
}
