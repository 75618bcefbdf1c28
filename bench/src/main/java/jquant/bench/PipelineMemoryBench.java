package jquant.bench;

import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Peak resident memory and wall time of each step of the best method's pipeline ({@code calibrate
 * --second-moments}, {@code allocate}, {@code pack --rounding gptq}, {@code verify}, {@code eval}) on
 * one or more models, each step a fresh process whose high-water mark ({@code VmHWM} in
 * {@code /proc/<pid>/status}, Linux) is read until it exits. Run on a model and on its first layers
 * (tinyllama-1.1b and tinyllama-2l), it shows whether a step's memory grows with the number of layers.
 */
public final class PipelineMemoryBench {
    private static final Pattern HIGH_WATER = Pattern.compile("VmHWM:\\s+(\\d+) kB");
    /** The steps, in pipeline order. */
    public static final List<String> STEPS = List.of("calibrate", "allocate", "pack", "verify", "eval");

    /** One step of one model: peak resident kilobytes and seconds. */
    public record Result(Path model, String step, long peakKb, double seconds) {}

    private PipelineMemoryBench() {}

    /**
     * @param command the command that starts jquant (java, JVM options, class path, main class)
     * @param work    a folder for the stats, plans and packed files (one subfolder per model)
     */
    public static List<Result> run(List<String> command, List<Path> models, Path data, int tokens, double budget, Path work, PrintStream out)
            throws IOException, InterruptedException {
        if (!Files.isReadable(Path.of("/proc/self/status"))) throw new IllegalStateException("peak memory is read from /proc, which this system lacks");
        List<Result> results = new ArrayList<>();
        out.printf("%-28s %-10s %14s %10s%n", "model", "step", "peak RSS", "wall");
        for (int m = 0; m < models.size(); m++) {
            Path model = models.get(m), dir = Files.createDirectories(work.resolve("model-" + m));
            String stats = dir.resolve("stats.gguf").toString(), plan = dir.resolve("plan.json").toString(), packed = dir.resolve("model.jqw").toString();
            String b = budget == Math.rint(budget) ? Long.toString((long) budget) : Double.toString(budget);
            List<List<String>> steps = List.of(
                    List.of("calibrate", model.toString(), "--data", data.toString(), "--second-moments", "--tokens", Integer.toString(tokens), "--budgets", b, "--out", stats),
                    List.of("allocate", model.toString(), "--budget", b, "--stats", stats, "--out", plan),
                    List.of("pack", model.toString(), "--plan", plan, "--stats", stats, "--rounding", "gptq", "--out", packed),
                    List.of("verify", packed, "--source", model.toString(), "--stats", stats),
                    // eval one layer at a time: window by window it maps and pages in the whole file, by design
                    List.of("eval", packed, "--data", data.toString(), "--ctx", "256", "--layerwise"));
            for (List<String> step : steps) {
                Result r = child(command, model, step);
                results.add(r);
                out.printf(Locale.ROOT, "%-28s %-10s %,11d kB %9.1fs%n", model.getFileName(), r.step(), r.peakKb(), r.seconds());
            }
        }
        return results;
    }

    private static Result child(List<String> command, Path model, List<String> step) throws IOException, InterruptedException {
        List<String> cmd = new ArrayList<>(command);
        cmd.add("-q");
        cmd.addAll(step);
        long t0 = System.nanoTime();
        Process p = new ProcessBuilder(cmd).redirectOutput(ProcessBuilder.Redirect.DISCARD).redirectError(ProcessBuilder.Redirect.PIPE).start();
        Path status = Path.of("/proc/" + p.pid() + "/status");
        long peak = 0;
        while (p.isAlive()) {
            peak = Math.max(peak, highWater(status));
            Thread.sleep(20);
        }
        String err = new String(p.getErrorStream().readAllBytes()).strip();
        if (p.exitValue() != 0) throw new IllegalStateException("jquant " + step.getFirst() + " failed (exit " + p.exitValue() + "): " + err);
        return new Result(model, step.getFirst(), peak, (System.nanoTime() - t0) / 1e9);
    }

    /** The process's peak resident set in kB, or 0 once it has gone. */
    private static long highWater(Path status) {
        try {
            Matcher m = HIGH_WATER.matcher(Files.readString(status));
            return m.find() ? Long.parseLong(m.group(1)) : 0;
        } catch (IOException e) {
            return 0;
        }
    }
}
