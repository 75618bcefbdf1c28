package jquant.cli;

import jquant.runtime.LoadedModel;
import jquant.formats.Checkpoint;
import jquant.formats.CheckpointException;
import jquant.formats.Checkpoints;
import jquant.formats.InputFiles;
import jquant.formats.Vocabulary;
import jquant.formats.jqw.JqwFile;
import jquant.formats.jqw.JqwModelMetadata;
import jquant.formats.llama2c.Llama2cTokenizerReader;
import jquant.formats.tokenizer.HfTokenizerJson;
import jquant.formats.tokenizer.SentencePieceModel;
import jquant.runtime.Tokenizer;
import picocli.CommandLine.ArgGroup;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;
import picocli.CommandLine.Model.CommandSpec;

import java.io.IOException;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.Callable;

/** {@code jquant tokenize}: a text's tokens under a model's tokenizer, printed as llama.cpp's {@code llama-tokenize} prints them. */
@Command(name = "tokenize", description = "Tokenize a text as a model does, like llama.cpp's llama-tokenize: one line per token "
        + "(id -> 'piece', control tokens by name, a piece that is not whole UTF-8 characters as \\xNN bytes), the id list, or the count. "
        + "BOS is added when the tokenizer adds it.")
final class TokenizeCommand implements Callable<Integer> {

    @Parameters(paramLabel = "<model|tokenizer>", description = "A model jquant opens (llama2.c .bin with its tokenizer beside it, GGUF, "
            + "Hugging Face folder, .jqw), a tokenizer file (tokenizer.json, a SentencePiece .model, a llama2.c tokenizer.bin or tok<N>.bin) "
            + "or a folder holding tokenizer.json or tokenizer.model without a model.")
    Path source;

    @ArgGroup(exclusive = true, multiplicity = "1")
    Text text;

    /** The text: given on the command line or read from a file (llama-tokenize's -p and -f). */
    static final class Text {
        @Option(names = {"-p", "--prompt"}, required = true, paramLabel = "<text>", description = "The text to tokenize.")
        String prompt;

        @Option(names = "--file", required = true, paramLabel = "<file>", description = "A UTF-8 text file to tokenize; - reads standard input.")
        Path file;
    }

    @ArgGroup(exclusive = true)
    Output output = new Output();

    static final class Output {
        @Option(names = "--ids", description = "Print the ids as one list: [1, 2, …].")
        boolean ids;

        @Option(names = "--count", description = "Print the number of tokens only.")
        boolean count;
    }

    @Option(names = "--no-bos", description = "Never add BOS.")
    boolean noBos;

    @Spec
    CommandSpec spec;

    @Override
    public Integer call() throws Exception {
        Vocabulary vocabulary = vocabulary(source);
        Tokenizer tokenizer;
        try {
            tokenizer = Tokenizer.of(vocabulary);
        } catch (IllegalArgumentException e) {
            throw new CheckpointException(source, "its tokenizer: " + e.getMessage());
        }
        int[] ids = tokenizer.encode(text(), tokenizer.addsBos() && !noBos);
        PrintWriter out = spec.commandLine().getOut();
        if (output.count) {
            out.println(ids.length);
        } else if (output.ids) {
            StringBuilder line = new StringBuilder("[");
            for (int i = 0; i < ids.length; i++) line.append(i == 0 ? "" : ", ").append(ids[i]);
            out.println(line.append(']'));
        } else {
            for (int id : ids) out.printf("%6d -> '%s'%n", id, piece(tokenizer.pieceBytes(id)));
        }
        out.flush();
        return 0;
    }

    /** The text as given: {@code --prompt}, standard input for {@code --file -} (which may be empty, as a prompt may), or a text file. */
    private String text() throws IOException {
        if (text.prompt != null) return text.prompt;
        if (text.file.toString().equals("-")) return InputFiles.decodeText(text.file, System.in.readAllBytes());
        return InputFiles.readText(text.file);
    }

    /**
     * The vocabulary of {@code path}: a tokenizer file recognised by its name, a folder's tokenizer file when the
     * folder holds no model's weights, a packed {@code .jqw} by its
     * magic, anything else opened as a checkpoint (whose tokenizer may sit beside it).
     */
    private static Vocabulary vocabulary(Path path) throws CheckpointException {
        if (Files.isDirectory(path) && !holdsWeights(path)) {
            for (String file : List.of("tokenizer.json", "tokenizer.model")) {
                if (Files.isRegularFile(path.resolve(file))) return vocabulary(path.resolve(file));
            }
        }
        String name = path.getFileName().toString();
        if (name.endsWith(".json") && !name.endsWith(".safetensors.index.json")) return HfTokenizerJson.read(path);
        if (name.endsWith(".model")) return SentencePieceModel.read(path);
        if (name.equals("tokenizer.bin") || name.matches("tok[0-9]+\\.bin")) return Llama2cTokenizerReader.read(path);
        if (LoadedModel.isPacked(path)) {
            try (JqwFile f = JqwFile.open(path)) {
                return JqwModelMetadata.vocabulary(f);
            }
        }
        try (Checkpoint c = Checkpoints.open(path)) {
            return c.vocabulary().orElseThrow(() -> new CheckpointException(path,
                    "no tokenizer found: pass the tokenizer file itself, or put tokenizer.bin beside the checkpoint"));
        }
    }

    /** Whether {@code folder} holds safetensors weights: a Hugging Face model, not a tokenizer alone. */
    private static boolean holdsWeights(Path folder) throws CheckpointException {
        try (DirectoryStream<Path> weights = Files.newDirectoryStream(folder, "*.safetensors")) {
            return weights.iterator().hasNext();
        } catch (IOException e) {
            throw new CheckpointException(folder, "cannot read: " + InputFiles.reason(e));
        }
    }

    /** A piece as text; bytes that are not part of a whole UTF-8 character are written {@code \xNN}. */
    private static String piece(byte[] bytes) {
        StringBuilder text = new StringBuilder();
        for (int i = 0; i < bytes.length; ) {
            int length = utf8Length(bytes, i);
            if (length > 0) {
                text.append(new String(bytes, i, length, StandardCharsets.UTF_8));
                i += length;
            } else {
                text.append(String.format("\\x%02X", bytes[i++] & 0xFF));
            }
        }
        return text.toString();
    }

    /** The length of the well-formed UTF-8 character at {@code i}, or 0 if there is none. */
    private static int utf8Length(byte[] bytes, int i) {
        int lead = bytes[i] & 0xFF;
        int length = lead < 0x80 ? 1 : lead >= 0xC2 && lead < 0xE0 ? 2 : lead >= 0xE0 && lead < 0xF0 ? 3 : lead >= 0xF0 && lead < 0xF5 ? 4 : 0;
        if (length == 0 || i + length > bytes.length) return 0;
        int codePoint = length == 1 ? lead : lead & (0xFF >> (length + 1));
        for (int k = 1; k < length; k++) {
            if ((bytes[i + k] & 0xC0) != 0x80) return 0;
            codePoint = codePoint << 6 | bytes[i + k] & 0x3F;
        }
        boolean shortest = length < 3 || codePoint >= (length == 3 ? 0x800 : 0x10000);
        return shortest && codePoint <= 0x10FFFF && (codePoint < 0xD800 || codePoint > 0xDFFF) ? length : 0;
    }
}
