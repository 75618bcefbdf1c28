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
 *
 * <p>Peak RSS includes the heap the collector chose to commit, which depends on timing: the same verify
 * run has read between 0.4 and 2 layers more on the 22-layer model than on the 2-layer one from run to
 * run, with the same live data. So each step also logs its collections ({@code -Xlog:gc} through
 * {@code JDK_JAVA_OPTIONS}) and reports its live heap: the largest occupancy right after a collection.
 */
public final class PipelineMemoryBench {
    private static final Pattern HIGH_WATER = Pattern.compile("VmHWM:\\s+(\\d+) kB");
    /** The steps, in pipeline order. */
    public static final List<String> STEPS = List.of("calibrate", "allocate", "pack", "verify", "eval");

    /** "GC(3) Pause Young (Normal) (G1 Evacuation Pause) 357M->314M(773M) 1.786ms": the occupancy after it. */
    private static final Pattern AFTER_COLLECTION = Pattern.compile("\\d+[KMG]->(\\d+)([KMG])\\(\\d+[KMG]\\)");

    /**
     * One step of one model: peak resident kilobytes, the largest heap occupancy after a collection in
     * kilobytes (−1 if the step never collected), and seconds.
     */
    public record Result(Path model, String step, long peakKb, long liveKb, double seconds) {}

    private PipelineMemoryBench() {}

    /**
     * @param command the command that starts jquant (java, JVM options, class path, main class)
     * @param work    a folder for the stats, plans and packed files (one subfolder per model)
     */
    public static List<Result> run(List<String> command, List<Path> models, Path data, int tokens, double budget, Path work, PrintStream out)
            throws IOException, InterruptedException {
        if (!Files.isReadable(Path.of("/proc/self/status"))) throw new IllegalStateException("peak memory is read from /proc, which this system lacks");
        List<Result> results = new ArrayList<>();
        out.printf("%-28s %-10s %14s %14s %10s%n", "model", "step", "peak RSS", "live heap", "wall");
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
                Result r = child(command, model, step, dir.resolve(step.getFirst() + ".gc.log"));
                results.add(r);
                out.printf(Locale.ROOT, "%-28s %-10s %,11d kB %14s %9.1fs%n", model.getFileName(), r.step(), r.peakKb(),
                        r.liveKb() < 0 ? "no collection" : String.format(Locale.ROOT, "%,11d kB", r.liveKb()), r.seconds());
            }
        }
        return results;
    }

    private static Result child(List<String> command, Path model, List<String> step, Path gcLog) throws IOException, InterruptedException {
        List<String> cmd = new ArrayList<>(command);
        cmd.add("-q");
        cmd.addAll(step);
        Files.deleteIfExists(gcLog);
        ProcessBuilder builder = new ProcessBuilder(cmd).redirectOutput(ProcessBuilder.Redirect.DISCARD).redirectError(ProcessBuilder.Redirect.PIPE);
        String inherited = builder.environment().getOrDefault("JDK_JAVA_OPTIONS", "");
        builder.environment().put("JDK_JAVA_OPTIONS", (inherited + " -Xlog:gc:file=" + gcLog).strip());
        long t0 = System.nanoTime();
        Process p = builder.start();
        Path status = Path.of("/proc/" + p.pid() + "/status");
        long peak = 0;
        while (p.isAlive()) {
            peak = Math.max(peak, highWater(status));
            Thread.sleep(20);
        }
        String err = new String(p.getErrorStream().readAllBytes()).strip();
        if (p.exitValue() != 0) throw new IllegalStateException("jquant " + step.getFirst() + " failed (exit " + p.exitValue() + "): " + err);
        return new Result(model, step.getFirst(), peak, liveKb(gcLog), (System.nanoTime() - t0) / 1e9);
    }

    /** The largest heap occupancy right after a collection in a {@code -Xlog:gc} file, in kB; −1 if there was none. */
    static long liveKb(Path gcLog) throws IOException {
        if (!Files.exists(gcLog)) return -1;
        long live = -1;
        for (String line : Files.readAllLines(gcLog)) {
            Matcher m = AFTER_COLLECTION.matcher(line);
            if (!m.find()) continue;
            long kb = Long.parseLong(m.group(1)) << switch (m.group(2)) { case "K" -> 0; case "M" -> 10; default -> 20; };
            live = Math.max(live, kb);
        }
        return live;
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
