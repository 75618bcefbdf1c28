package jquant.cli;

import me.tongfei.progressbar.ConsoleProgressBarConsumer;
import me.tongfei.progressbar.DelegatingProgressBarConsumer;
import me.tongfei.progressbar.ProgressBar;
import me.tongfei.progressbar.ProgressBarBuilder;
import me.tongfei.progressbar.ProgressBarStyle;

import java.io.PrintStream;
import java.time.Duration;

/**
 * Progress bars (with rate and ETA) on stderr for anything that may run longer than a second or
 * two. On a terminal the bar redraws in place; otherwise (CI logs, pipes) it prints a plain line now
 * and then instead of a stream of carriage returns.
 */
final class Progress implements AutoCloseable {
    private final ProgressBar bar;

    Progress(String task, long total, String unit) {
        PrintStream err = System.err;
        ProgressBarBuilder b = new ProgressBarBuilder().setTaskName(task).setInitialMax(total)
                .setStyle(ProgressBarStyle.ASCII).showSpeed().setUnit(" " + unit, 1)
                .continuousUpdate().setMaxRenderedLength(100);
        if (System.console() != null && System.console().isTerminal()) {
            b.setConsumer(new ConsoleProgressBarConsumer(err)).setUpdateIntervalMillis(200);
        } else {
            b.setConsumer(new DelegatingProgressBarConsumer(err::println)).setUpdateIntervalMillis((int) Duration.ofSeconds(10).toMillis());
        }
        bar = b.build();
    }

    void stepTo(long done) {
        bar.stepTo(done);
    }

    /** Steps to {@code done} of a total known only once the work has started. */
    void stepTo(long done, long total) {
        bar.maxHint(total);
        bar.stepTo(done);
    }

    @Override
    public void close() {
        bar.close();
    }
}
