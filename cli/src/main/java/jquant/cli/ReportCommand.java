package jquant.cli;

import jquant.formats.CheckpointException;
import jquant.reports.EvalResult;
import jquant.reports.QualityReport;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;

/** {@code jquant report}: collects {@code jquant eval --json} results into Markdown, HTML (with charts) and JSON. */
@Command(name = "report", description = "Turn 'jquant eval --json' results into report.md, report.html (with charts) and report.json.")
final class ReportCommand implements Callable<Integer> {

    @Parameters(paramLabel = "<eval.json>", arity = "1..*", description = "Results written by 'jquant eval --json', in the order to list them.")
    List<Path> results;

    @Option(names = "--out", required = true, paramLabel = "<dir>", description = "Folder for report.md, report.html and report.json.")
    Path out;

    @Option(names = "--title", defaultValue = "jquant quality report", description = "Report title (default: ${DEFAULT-VALUE}).")
    String title;

    @Spec
    CommandSpec spec;

    @Override
    public Integer call() throws Exception {
        OutputSafety safety = new OutputSafety().inputs(results);
        if (Files.exists(out) && !Files.isDirectory(out)) throw new CheckpointException(out, "is a file; --out names the report's folder");
        for (String name : QualityReport.FILES) safety.check(out.resolve(name));
        List<EvalResult> records = new ArrayList<>();
        for (Path p : results) records.add(EvalResult.read(p));
        QualityReport report = new QualityReport(title, records);
        report.write(out);
        spec.commandLine().getOut().print(report.markdown());
        spec.commandLine().getOut().printf("%nWrote %s, %s and %s%n", out.resolve("report.md"), out.resolve("report.html"), out.resolve("report.json"));
        spec.commandLine().getOut().flush();
        return 0;
    }
}
