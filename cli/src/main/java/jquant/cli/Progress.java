package jquant.cli;

import me.tongfei.progressbar.ConsoleProgressBarConsumer;
import me.tongfei.progressbar.ProgressBar;
import me.tongfei.progressbar.ProgressBarBuilder;
import me.tongfei.progressbar.ProgressBarConsumer;
import me.tongfei.progressbar.ProgressBarStyle;

import java.io.PrintStream;
import java.time.Duration;

/**
 * Progress bars (with rate and ETA) on stderr for anything that may run longer than a second or
 * two. On a terminal the bar redraws in place; otherwise (CI logs, pipes) it prints a plain line now
 * and then instead of a stream of carriage returns. A bar ends with exactly one final line; under
 * {@code --quiet} there is none at all.
 */
final class Progress implements AutoCloseable {
    /** Set from {@code --quiet} before each command runs. */
    static volatile boolean quiet;

    private final String task;
    private final String unit;
    private long total;
    private ProgressBar bar;
    private boolean closed;

    /** A bar of {@code total} steps; a total of 0 means it is known only from the first {@link #stepTo(long, long)}. */
    Progress(String task, long total, String unit) {
        this.task = task;
        this.unit = unit;
        this.total = total;
        if (total > 0) start();
    }

    private void start() {
        if (quiet) return;
        PrintStream err = System.err;
        // Without a unit the steps are not things a rate of is worth showing (calibrate's thousandths of a layer).
        ProgressBarBuilder b = new ProgressBarBuilder().setTaskName(task).setInitialMax(total)
                .setStyle(ProgressBarStyle.ASCII).continuousUpdate().setMaxRenderedLength(100);
        if (!unit.isEmpty()) b.showSpeed().setUnit(" " + unit, 1);
        if (System.console() != null && System.console().isTerminal()) {
            b.setConsumer(new ConsoleProgressBarConsumer(err)).setUpdateIntervalMillis(200);
        } else {
            b.setConsumer(new LogLines(err)).setUpdateIntervalMillis((int) Duration.ofSeconds(10).toMillis());
        }
        bar = b.build();
    }

    /** Text shown beside the bar: where the work is (a layer, a rate). */
    void detail(String text) {
        if (bar != null) bar.setExtraMessage(text);
    }

    void stepTo(long done) {
        if (bar != null) bar.stepTo(done);
    }

    /** Steps to {@code done} of {@code total}, which the work itself reports (the bar starts at the first call). */
    void stepTo(long done, long total) {
        if (this.total == 0) {
            this.total = total;
            start();
        } else if (bar != null && total != this.total) {
            this.total = total;
            bar.maxHint(total);
        }
        stepTo(done);
    }

    /**
     * A bar as log lines, one now and then. The library renders the finished bar more than once (when
     * the count reaches the total and again when it closes), so a finished line is held back and only
     * the last rendering printed, when the bar closes: one final line, with the final time and rate.
     */
    private static final class LogLines implements ProgressBarConsumer {
        private final PrintStream err;
        private String held;

        LogLines(PrintStream err) {
            this.err = err;
        }

        @Override
        public int getMaxRenderedLength() {
            return 100;
        }

        @Override
        public synchronized void accept(String line) {
            if (line.contains(" 100% ")) {
                held = line;
            } else {
                held = null;
                err.println(line);
            }
        }

        @Override
        public synchronized void close() {
            if (held != null) err.println(held);
            held = null;
        }
    }

    /** Prints the final line once, however often it is called. */
    @Override
    public void close() {
        if (closed) return;
        closed = true;
        if (bar != null) bar.close();
    }
}
