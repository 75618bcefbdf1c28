package jquant.bench;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Time to first token as a user sees it: {@code jquant run <model> -p <prompt> -n 1 --timings} in a
 * fresh process, with the model's pages dropped from the page cache first (cold) or left there
 * (warm), with layer-pipelined loading against loading everything first. Each case runs
 * {@code repeats} times; the median of the child's own "ms after the process started" is reported.
 */
public final class TtftBench {
    private static final Pattern FIRST_TOKEN = Pattern.compile("first token (\\d+) ms after open, (\\d+) ms after the process started");

    /** One case's figures: the medians in ms. */
    public record Result(String loading, boolean cold, long afterOpenMs, long afterStartMs) {}

    private TtftBench() {}

    /**
     * @param command the command that starts jquant (the java executable, JVM options, class path and
     *                main class); the bench appends {@code run} and its arguments
     */
    public static List<Result> run(List<String> command, Path model, String prompt, List<String> modelArgs, int repeats, PrintStream out)
            throws Exception {
        List<Result> results = new ArrayList<>();
        out.printf("%-10s %-5s  %22s  %26s%n", "loading", "cache", "first token after open", "after the process started");
        for (boolean cold : new boolean[] {true, false}) {
            if (cold && !PageCache.supported()) {
                out.println("(cold runs skipped: dropping pages needs Linux)");
                continue;
            }
            for (String loading : List.of("eager", "pipelined")) {
                long[] open = new long[repeats], start = new long[repeats];
                for (int i = 0; i < repeats; i++) {
                    if (cold) PageCache.evict(model);
                    else if (i == 0) child(command, model, prompt, modelArgs, loading);   // bring the pages in
                    long[] t = child(command, model, prompt, modelArgs, loading);
                    open[i] = t[0];
                    start[i] = t[1];
                }
                Result r = new Result(loading, cold, median(open), median(start));
                results.add(r);
                out.printf("%-10s %-5s  %19d ms  %23d ms%n", loading, cold ? "cold" : "warm", r.afterOpenMs(), r.afterStartMs());
            }
        }
        return results;
    }

    private static long[] child(List<String> command, Path model, String prompt, List<String> modelArgs, String loading) throws Exception {
        List<String> cmd = new ArrayList<>(command);
        cmd.addAll(List.of("run", model.toString(), "-p", prompt, "-n", "1", "--timings", "--load", loading));
        cmd.addAll(modelArgs);
        Process p = new ProcessBuilder(cmd).redirectOutput(ProcessBuilder.Redirect.DISCARD).start();
        String line, found = null;
        StringBuilder err = new StringBuilder();
        try (BufferedReader r = new BufferedReader(new InputStreamReader(p.getErrorStream(), StandardCharsets.UTF_8))) {
            while ((line = r.readLine()) != null) {
                err.append(line).append('\n');
                if (FIRST_TOKEN.matcher(line).find()) found = line;
            }
        }
        int rc = p.waitFor();
        if (rc != 0 || found == null) throw new IllegalStateException("jquant run failed (exit " + rc + "): " + err.toString().strip());
        Matcher m = FIRST_TOKEN.matcher(found);
        m.find();
        return new long[] {Long.parseLong(m.group(1)), Long.parseLong(m.group(2))};
    }

    private static long median(long[] v) {
        long[] s = v.clone();
        Arrays.sort(s);
        return s[s.length / 2];
    }
}
