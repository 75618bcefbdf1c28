package jquant.cli;

import jquant.formats.Checkpoint;
import jquant.formats.Checkpoints;
import jquant.formats.gguf.GgufConverter;
import jquant.formats.gguf.GgufWriter;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.Callable;

/** {@code jquant convert}: any checkpoint to a llama.cpp GGUF file ({@link GgufConverter}). */
@Command(name = "convert", description = {
        "Write a checkpoint (HF folder, single or sharded safetensors; llama2.c .bin; GGUF) as a GGUF file in llama.cpp's layout,",
        "as its convert_hf_to_gguf.py writes it: names, hyper-parameters, tokenizer, q/k rows, F32 norms and biases, matrices in --type.",
        "Streamed one tensor at a time; the file appears only when complete."})
final class ConvertCommand implements Callable<Integer> {

    @Parameters(paramLabel = "<model>", description = "Checkpoint: HF folder (Llama, Qwen2), llama2.c .bin, or GGUF.")
    Path model;

    @Option(names = "--type", defaultValue = "f16", paramLabel = "f32|f16|bf16|q8_0",
            description = "Type of the matrices (default: ${DEFAULT-VALUE}); q8_0 as ggml's quantize_row_q8_0_ref.")
    String type;

    @Option(names = "--out", required = true, paramLabel = "<gguf>", description = "GGUF file to write.")
    Path out;

    @Option(names = "--tokenizer", paramLabel = "<file>", description = "llama2.c tokenizer.bin for a .bin checkpoint.")
    Path tokenizer;

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
        new OutputSafety().model(model, tokenizer).check(out);
        PrintWriter log = spec.commandLine().getOut();
        List<GgufWriter.PendingTensor> written;
        try (Checkpoint c = Checkpoints.open(model, tokenizer)) {
            written = GgufConverter.convert(c, target, out, (name, shape, from, to) -> {
                if (!Progress.quiet) log.printf("  %-28s %-12s %s -> %s%n", name, RepackCommand.shapeString(shape), from, to).flush();
            });
        }
        log.printf("Wrote %s: %d tensors, matrices %s, %,d bytes%n", out, written.size(), target.dtype, Files.size(out));
        log.flush();
        return 0;
    }
}
