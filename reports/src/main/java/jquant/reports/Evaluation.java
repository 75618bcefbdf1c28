package jquant.reports;

import jquant.formats.CheckpointException;
import jquant.formats.InputFiles;
import jquant.runtime.KernelChoice;
import jquant.runtime.LoadedModel;
import jquant.runtime.PackedModelLoader;
import jquant.runtime.Perplexity;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * {@code jquant eval} as a library call: perplexity on a text by llama.cpp's {@code llama-perplexity}
 * protocol (see {@link Perplexity}: the text tokenized once with BOS, cut into windows of {@code ctx}
 * tokens, each starting with BOS, only the second half of each window scored), and with a base model
 * the KL divergence from it and top-1 agreement, as an {@link EvalResult}.
 */
public final class Evaluation {
    private Evaluation() {}

    /**
     * What to evaluate and how.
     *
     * @param model     any checkpoint jquant reads, or a .jqw
     * @param data      a UTF-8 text file
     * @param ctx       window length in tokens
     * @param base      reference model for KL divergence and top-1 agreement (same vocabulary), or null
     * @param tokenizer a llama2.c tokenizer.bin for .bin checkpoints, or null
     * @param mode      how a packed model's weights run
     * @param kernels   how a checkpoint's linear layers multiply
     */
    public record Request(Path model, Path data, int ctx, Path base, Path tokenizer, PackedModelLoader.Mode mode, KernelChoice kernels) {}

    /** Told once the models are loaded and the text tokenized, then after each window; both do nothing unless overridden. */
    public interface Listener {
        default void started(long windows) {}

        default void scored(long windows) {}
    }

    /** Evaluates {@code request}; loading and tokenizing count towards its seconds. */
    public static EvalResult run(Request request, Listener listener) throws IOException {
        String text = readText(request.data());
        long start = System.nanoTime();
        Perplexity ppl = new Perplexity(request.ctx());
        Path model = request.model(), base = request.base();
        String mode = LoadedModel.isPacked(model) ? request.mode().name().toLowerCase().replace('_', '-') : "";
        long fileBytes = bytesOnDisk(model);
        try (LoadedModel m = LoadedModel.open(model, request.tokenizer(), request.mode(), request.kernels())) {
            int[] tokens = m.tokenizer().encode(text);
            int bos = m.tokenizer().addsBos() ? m.tokenizer().bos() : -1;
            if (base == null) {
                listener.started(tokens.length / Math.max(request.ctx(), 1));
                Perplexity.Result r = ppl.evaluate(m.model(), tokens, bos, (done, total, p) -> listener.scored(done));
                return new EvalResult(model.toString(), request.data().toString(), request.ctx(), mode, fileBytes, r, null, null, null, seconds(start));
            }
            try (LoadedModel b = LoadedModel.open(base, request.tokenizer(), request.mode(), request.kernels())) {
                if (!b.vocabulary().pieces().equals(m.vocabulary().pieces())) {
                    throw new CheckpointException(base, "its vocabulary differs from " + model + "'s: KL divergence needs the same tokens");
                }
                listener.started(tokens.length / Math.max(request.ctx(), 1));
                Perplexity.Comparison c = ppl.compare(m.model(), b.model(), tokens, bos, (done, total, p) -> listener.scored(done));
                return new EvalResult(model.toString(), request.data().toString(), request.ctx(), mode, fileBytes, c.model(), base.toString(),
                        c.base(), new EvalResult.Divergence(c.meanKl(), c.klP99(), c.maxKl(), c.top1Agreement()), seconds(start));
            }
        }
    }

    private static double seconds(long start) {
        return (System.nanoTime() - start) / 1e9;
    }

    /** Size of a model file, or of everything in a model folder. */
    private static long bytesOnDisk(Path path) throws IOException {
        if (!Files.isDirectory(path)) return Files.size(path);
        try (var files = Files.walk(path)) {
            return files.filter(Files::isRegularFile).mapToLong(p -> p.toFile().length()).sum();
        }
    }

    /** The whole file as strict UTF-8: a malformed byte is an error naming its offset, never a replacement character. */
    public static String readText(Path file) throws IOException {
        return InputFiles.readText(file);
    }
}
