package jquant.cli;

import jquant.formats.Checkpoint;
import jquant.formats.Checkpoints;
import jquant.formats.gguf.GgufConverter;
import jquant.formats.gguf.GgufWriter;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

import java.io.PrintWriter;
import java.nio.file.Files;
import java.util.List;
import java.util.concurrent.Callable;

/** {@code jquant convert}: any checkpoint to a llama.cpp GGUF file ({@link GgufConverter}). */
@Command(name = "convert", description = {
        "Write a checkpoint (HF folder, single or sharded safetensors; llama2.c .bin; GGUF) as a GGUF file in llama.cpp's layout,",
        "as its convert_hf_to_gguf.py writes it: names, hyper-parameters, tokenizer, q/k rows, F32 norms and biases, matrices in --type.",
        "Streamed one tensor at a time; the file appears only when complete."})
final class ConvertCommand implements Callable<Integer> {

    @Mixin
    ModelArgument model = new ModelArgument();

    @Option(names = "--type", defaultValue = "f16", paramLabel = "f32|f16|bf16|q8_0",
            description = "Type of the matrices (default: ${DEFAULT-VALUE}); q8_0 as ggml's quantize_row_q8_0_ref.")
    String type;

    @Mixin
    OutputFile out = new OutputFile();

    @Mixin
    TokenizerOption tokenizer = new TokenizerOption();

    @Spec
    CommandSpec spec;

    @Override
    public Integer call() throws Exception {
        GgufConverter.Target target;
        try {
            target = GgufConverter.Target.parse(type);
        } catch (IllegalArgumentException e) {
            throw new ParameterException(spec.commandLine(), "--type: " + e.getMessage());
        }
        new OutputSafety().model(model.path, tokenizer.path).check(out.path);
        PrintWriter log = spec.commandLine().getOut();
        List<GgufWriter.PendingTensor> written;
        try (Checkpoint c = Checkpoints.open(model.path, tokenizer.path)) {
            written = GgufConverter.convert(c, target, out.path, (name, shape, from, to) -> {
                if (!Progress.quiet) log.printf("  %-28s %-12s %s -> %s%n", name, RepackCommand.shapeString(shape), from, to).flush();
            });
        }
        log.printf("Wrote %s: %d tensors, matrices %s, %,d bytes%n", out.path, written.size(), target.dtype, Files.size(out.path));
        log.flush();
        return 0;
    }
}
