package jquant.cli;

import jquant.bench.AllocatorBench;
import jquant.bench.RuntimeBench;
import jquant.bench.TernaryBench;
import jquant.bench.UnpackBench;
import picocli.CommandLine.Command;
import picocli.CommandLine.Parameters;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;

/**
 * {@code jquant bench NAME [args]}: runs one of the whole-run benchmark programs of the bench module
 * (its JMH kernel micro-benchmarks run from {@code bench/target/benchmarks.jar}). Each prints its
 * figures as ratios against a baseline it measures in the same run (memory bandwidth, memcpy, the
 * scalar twin), because these machines are shared and noisy.
 */
@Command(name = "bench", description = {
        "Run a benchmark: each prints ratios against a baseline measured in the same run.",
        "  runtime [stories260K.bin]        memory bandwidth, f32 matvec, eval tokens/s (vector vs scalar)",
        "  unpack [channels length reps]    weightlet unpack GB/s vs memcpy, vs the Figure-13 baselines",
        "  allocator                        RE tables and greedy allocation of a 4096×14336 tensor",
        "  ternary [cols]                   ternary matvec GB/s vs bandwidth and prefill GMAC/s: PQ2_0, PTQ1_0, T2P"})
final class BenchCommand implements Callable<Integer> {

    @Parameters(index = "0", paramLabel = "<name>", description = "runtime, unpack, allocator or ternary")
    String name;

    @Parameters(index = "1..*", paramLabel = "<arg>", description = "Arguments passed to the benchmark.")
    List<String> args = new ArrayList<>();

    @Override
    public Integer call() throws Exception {
        String[] a = args.toArray(String[]::new);
        switch (name) {
            case "runtime" -> RuntimeBench.main(a);
            case "unpack" -> UnpackBench.main(a);
            case "allocator" -> AllocatorBench.main(a);
            case "ternary" -> TernaryBench.main(a);
            default -> throw new picocli.CommandLine.ParameterException(new picocli.CommandLine(this),
                    "unknown benchmark '" + name + "': choose runtime, unpack, allocator or ternary");
        }
        return 0;
    }
}
