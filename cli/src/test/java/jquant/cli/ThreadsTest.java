package jquant.cli;

import jquant.testsupport.Slow;
import jquant.testsupport.Stories260K;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@code --threads} reaches every stage: with one thread the pipeline's work stays on the thread that
 * runs the command (the CPU time of every other thread of the JVM, pools included, barely moves); with
 * two it does not, which shows the measure sees a stage that spreads its work.
 */
@Slow
class ThreadsTest {
    private static final ThreadMXBean THREADS = ManagementFactory.getThreadMXBean();

    /** CPU nanoseconds of every live thread but the caller's. */
    private static Map<Long, Long> othersCpu() {
        Map<Long, Long> cpu = new HashMap<>();
        long me = Thread.currentThread().threadId();
        for (long id : THREADS.getAllThreadIds()) {
            long t = THREADS.getThreadCpuTime(id);
            if (id != me && t > 0) cpu.put(id, t);
        }
        return cpu;
    }

    /** CPU time the command took on this thread and on all others, in nanoseconds. */
    private static long[] cpuOf(String... args) {
        Map<Long, Long> before = othersCpu();
        long mine = THREADS.getCurrentThreadCpuTime();
        CliTest.Result r = CliTest.run(args);
        assertThat(r.code()).as(r.err()).isZero();
        mine = THREADS.getCurrentThreadCpuTime() - mine;
        long others = 0;
        for (var e : othersCpu().entrySet()) others += e.getValue() - before.getOrDefault(e.getKey(), 0L);
        return new long[] {mine, others};
    }

    @Test
    void oneThreadKeepsEveryStageOnTheCallingThread(@TempDir Path dir) throws IOException {
        String model = Stories260K.model().toString(), tokenizer = Stories260K.tokenizer().toString();
        Path text = jquant.testsupport.SharedFiles.data("tinystories-valid-sample.txt");
        String stats = dir.resolve("stats.gguf").toString(), plan = dir.resolve("plan.json").toString(), packed = dir.resolve("m.jqw").toString();
        String[][] stages = {
                {"calibrate", model, "--tokenizer", tokenizer, "--data", text.toString(), "--tokens", "1024", "--budgets", "4", "--second-moments", "--out", stats},
                {"allocate", model, "--tokenizer", tokenizer, "--budget", "4", "--stats", stats, "--out", plan},
                {"pack", model, "--tokenizer", tokenizer, "--plan", plan, "--stats", stats, "--rounding", "gptq", "--out", packed},
                {"verify", packed, "--source", model, "--tokenizer", tokenizer, "--stats", stats},
                {"eval", packed, "--data", text.toString(), "--ctx", "128"}};
        for (String[] stage : stages) {
            String[] args = new String[stage.length + 3];
            args[0] = "--threads";
            args[1] = "1";
            args[2] = "-q";
            System.arraycopy(stage, 0, args, 3, stage.length);
            long[] cpu = cpuOf(args);
            assertThat(cpu[1]).as("%s: CPU of other threads (ns) against the caller's %d", stage[0], cpu[0]).isLessThan(cpu[0] / 20);
        }
        // The same measure sees the work spread over two threads when asked for them.
        long[] two = cpuOf("--threads", "2", "-q", "eval", packed, "--data", text.toString(), "--ctx", "128");
        assertThat(two[1]).as("eval on two threads: CPU of the other thread against the caller's %d", two[0]).isGreaterThan(two[0] / 10);
    }
}
