package jquant.cli;

import jquant.formats.CheckpointException;
import jquant.reports.EvalResult;
import jquant.reports.QualityReport;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
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

    /** The folder of report.md, report.html and report.json. */
    @Mixin
    OutputFolder out = new OutputFolder();

    @Option(names = "--title", defaultValue = "jquant quality report", description = "Report title (default: ${DEFAULT-VALUE}).")
    String title;

    @Spec
    CommandSpec spec;

    @Override
    public Integer call() throws Exception {
        Path folder = out.path;
        OutputSafety safety = new OutputSafety().inputs(results);
        if (Files.exists(folder) && !Files.isDirectory(folder)) throw new CheckpointException(folder, "is a file; --out names the report's folder");
        for (String name : QualityReport.FILES) safety.check(folder.resolve(name));
        List<EvalResult> records = new ArrayList<>();
        for (Path p : results) records.add(EvalResult.read(p));
        QualityReport report = new QualityReport(title, records);
        report.write(folder);
        spec.commandLine().getOut().print(report.markdown());
        spec.commandLine().getOut().printf("%nWrote %s, %s and %s%n", folder.resolve("report.md"), folder.resolve("report.html"), folder.resolve("report.json"));
        spec.commandLine().getOut().flush();
        return 0;
    }
}
