package jquant.cli;

import jquant.runtime.Generation;
import jquant.runtime.LoadedModel;
import jquant.runtime.Sampler;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

import java.io.PrintWriter;
import java.util.Arrays;
import java.util.concurrent.Callable;

/** {@code jquant run}: text generation, streamed to stdout as tokens are chosen. */
@Command(name = "run", description = "Generate text from a prompt (greedy at temperature 0).")
final class RunCommand implements Callable<Integer> {

    @Mixin
    ModelArgument model = new ModelArgument();

    @Option(names = {"-p", "--prompt"}, defaultValue = "", description = "Prompt text (default: empty, start from BOS).")
    String prompt;

    // An initial value, not a defaultValue: picocli would apply that over what the old name's setter set.
    @Option(names = {"-n", "--n-predict"}, description = "Maximum new tokens, as llama.cpp's -n (default: ${DEFAULT-VALUE}).")
    int tokens = 256;

    @Option(names = "--tokens", hidden = true, paramLabel = "<N>")
    void oldTokens(int n) {
        tokens = n;
        OldOptionName.used(spec, "--tokens", "--n-predict (-n)");
    }

    @Option(names = "--temperature", defaultValue = "0", description = "Sampling temperature; 0 = greedy (default).")
    float temperature;

    @Option(names = "--seed", defaultValue = "0", description = "Sampling seed (default: ${DEFAULT-VALUE}).")
    long seed;

    @Option(names = "--ids", description = "Also print the generated token ids on a last line.")
    boolean ids;

    @Option(names = "--timings", description = "Print to stderr: open, prompt (tokens/s), time to first token since the "
            + "process started, and ms per generated token.")
    boolean timings;

    @Mixin
    ModelOptions options = new ModelOptions();

    @Spec
    CommandSpec spec;

    @Override
    public Integer call() throws Exception {
        if (tokens < 0) throw new ParameterException(spec.commandLine(), "--n-predict must be ≥ 0, got " + tokens);
        if (!(temperature >= 0) || !Float.isFinite(temperature)) throw new ParameterException(spec.commandLine(), "--temperature must be a finite number ≥ 0, got " + temperature);
        PrintWriter out = spec.commandLine().getOut();
        long openStart = System.nanoTime();
        try (LoadedModel m = options.open(model.path)) {
            long opened = System.nanoTime();
            int[] promptIds = m.tokenizer().encode(prompt);
            if (promptIds.length == 0) throw new IllegalArgumentException("the prompt is empty and the vocabulary adds no BOS to start from");
            int count = Math.min(tokens, m.model().config().maxSeqLen() - promptIds.length + 1);
            if (count < tokens) {
                spec.commandLine().getErr().printf("jquant: the model's context is %d positions: generating %d tokens, not %d%n",
                        m.model().config().maxSeqLen(), Math.max(count, 0), tokens);
            }
            Sampler sampler = temperature == 0 ? Sampler.greedy() : Sampler.temperature(temperature, seed);
            StreamingText text = new StreamingText(m, promptIds, out);
            text.start();
            long[] firstToken = {0};
            int[] generated = Generation.generate(m.model(), promptIds, Math.max(count, 0), sampler, m.tokenizer().eos(), token -> {
                if (firstToken[0] == 0) firstToken[0] = System.nanoTime();
                text.accept(token);
            });
            long done = System.nanoTime();
            out.println();
            if (timings && firstToken[0] != 0) {
                long sinceStart = java.lang.management.ManagementFactory.getRuntimeMXBean().getUptime() - (done - firstToken[0]) / 1_000_000;
                spec.commandLine().getErr().printf("jquant: open %.0f ms; prompt %d tokens, first token %.0f ms after open, %d ms after the process started"
                                + "%s; %d threads, %s%n",
                        (opened - openStart) / 1e6, promptIds.length, (firstToken[0] - opened) / 1e6, sinceStart,
                        generated.length > 1 ? String.format("; %.1f ms per further token", (done - firstToken[0]) / 1e6 / (generated.length - 1)) : "",
                        m.model().compute().pool().threads(), options.loading.name().toLowerCase());
            }
            if (ids) {
                int[] all = Arrays.copyOf(promptIds, promptIds.length + generated.length);
                System.arraycopy(generated, 0, all, promptIds.length, generated.length);
                out.println(Arrays.toString(all));
            }
            out.flush();
        }
        return 0;
    }

    /**
     * Prints the text as it grows. Decoding the whole sequence each time keeps SentencePiece's space
     * handling and multi-byte characters right; only complete characters are printed.
     */
    private static final class StreamingText {
        private final LoadedModel m;
        private final PrintWriter out;
        private int[] sequence;
        private int printed;

        StreamingText(LoadedModel m, int[] prompt, PrintWriter out) {
            this.m = m;
            this.out = out;
            this.sequence = prompt.clone();
        }

        void start() {
            emit();
        }

        void accept(int token) {
            sequence = Arrays.copyOf(sequence, sequence.length + 1);
            sequence[sequence.length - 1] = token;
            emit();
        }

        private void emit() {
            String text = m.tokenizer().decode(sequence);
            int end = text.length();
            while (end > printed && text.charAt(end - 1) == '\uFFFD') end--;  // an incomplete UTF-8 sequence
            if (end > printed) {
                out.print(text.substring(printed, end));
                out.flush();
                printed = end;
            }
        }
    }
}
