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

    /**
     * CPU nanoseconds of every live thread but the caller's and the JDK's housekeeping threads (reference
     * handling, the cleaner that unmaps freed memory segments): those run when a collection frees something
     * an earlier test left, whatever the thread count, and are no stage's work.
     */
    private static Map<Thread, Long> othersCpu() {
        Map<Thread, Long> cpu = new HashMap<>();
        for (Thread t : Thread.getAllStackTraces().keySet()) {
            if (t == Thread.currentThread() || housekeeping(t)) continue;
            long ns = THREADS.getThreadCpuTime(t.threadId());
            if (ns > 0) cpu.put(t, ns);
        }
        return cpu;
    }

    private static boolean housekeeping(Thread t) {
        ThreadGroup group = t.getThreadGroup();
        return t.getName().equals("Common-Cleaner") || group != null && group.getName().equals("system");
    }

    /** CPU time the command took on this thread and on all others, in nanoseconds, and the others by name. */
    private static Measured cpuOf(String... args) {
        Map<Thread, Long> before = othersCpu();
        long mine = THREADS.getCurrentThreadCpuTime();
        CliTest.Result r = CliTest.run(args);
        assertThat(r.code()).as(r.err()).isZero();
        mine = THREADS.getCurrentThreadCpuTime() - mine;
        long others = 0;
        StringBuilder names = new StringBuilder();
        for (var e : othersCpu().entrySet()) {
            long ns = e.getValue() - before.getOrDefault(e.getKey(), 0L);
            others += ns;
            if (ns > 0) names.append(' ').append(e.getKey().getName()).append('=').append(ns);
        }
        return new Measured(mine, others, names.toString());
    }

    private record Measured(long caller, long others, String byThread) {}

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
            Measured cpu = cpuOf(args);
            assertThat(cpu.others()).as("%s: CPU of other threads (ns) against the caller's %d:%s", stage[0], cpu.caller(), cpu.byThread())
                    .isLessThan(cpu.caller() / 20);
        }
        // The same measure sees the work spread over two threads when asked for them.
        Measured two = cpuOf("--threads", "2", "-q", "eval", packed, "--data", text.toString(), "--ctx", "128");
        assertThat(two.others()).as("eval on two threads: CPU of the other thread against the caller's %d", two.caller()).isGreaterThan(two.caller() / 10);
    }
}
