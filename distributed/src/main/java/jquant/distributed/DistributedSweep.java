package jquant.distributed;

import jquant.formats.AtomicOutput;
import jquant.pipeline.Sweep;
import jquant.reports.EvalResult;
import jquant.reports.QualityReport;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

/**
 * {@code jquant sweep} on an {@link Engine}: this JVM prepares the sweep ({@link Sweep#prepare}: inputs checked, the
 * manifest, one calibration), then every pack ({@link Sweep.Pack}: allocate, pack, verify, evaluate in each mode) and
 * every compare file ({@link Sweep.Compare}: evaluate) is one element of {@link Engine#forEach} that a worker takes
 * ({@link Sweep.Worker}, which runs the base model once for all it takes), and this JVM writes the report
 * from the evaluations the workers left in the sweep's folder. The folder is the only channel: every worker reads the model, the texts
 * and the stats there and writes its files there, so it must be one path that every worker reads and writes
 * (docs/distributed.md). A cell that fails leaves {@code failed-<mode>.txt} ({@code failed.txt} for a compare file) with
 * its error beside where its evaluation would be, and the report lists it; the others go on.
 */
public final class DistributedSweep {
    private DistributedSweep() {}

    /** Runs (or resumes: done cells are skipped) the sweep on {@code engine} and writes its report; returns the report. */
    public static QualityReport run(Sweep.Options o, Engine engine, Sweep.Listener listener, boolean progress) throws IOException {
        Sweep.prepare(o, listener);
        List<Sweep.Cell> cells = Sweep.cells(o);
        Set<Sweep.Cell> doneBefore = new HashSet<>();
        for (Sweep.Cell cell : cells) {
            if (Files.exists(Sweep.evalFile(o, cell))) doneBefore.add(cell);
            Files.deleteIfExists(failedFile(o, cell));
        }
        engine.forEach("jquant sweep", Sweep.workUnits(o), Sweep.WorkUnit.class, new WorkTasks(SweepSpec.of(o), progress));
        List<Sweep.Outcome> outcomes = new ArrayList<>();
        for (Sweep.Cell cell : cells) {
            Sweep.Outcome outcome = collect(o, cell, doneBefore.contains(cell));
            outcomes.add(outcome);
            listener.cellDone(outcome, outcomes.size(), cells.size());
        }
        return Sweep.report(o, outcomes);
    }

    /** Where a failed cell's error is left: {@code DIR/<method>-<B>/failed-<mode>.txt}, or {@code DIR/compare/<name>/failed.txt}. */
    static Path failedFile(Sweep.Options o, Sweep.Cell cell) {
        String name = switch (cell) {
            case Sweep.PackCell p -> "failed-" + Sweep.modeLabel(p.mode()) + ".txt";
            case Sweep.Compare c -> "failed.txt";
        };
        return Sweep.evalFile(o, cell).resolveSibling(name);
    }

    /** What the workers left for {@code cell}: its evaluation, its error, or neither (its worker stopped). */
    private static Sweep.Outcome collect(Sweep.Options o, Sweep.Cell cell, boolean resumed) throws IOException {
        Path json = Sweep.evalFile(o, cell), failed = failedFile(o, cell);
        if (Files.exists(json)) return new Sweep.Outcome(cell, EvalResult.read(json), resumed, null);
        if (Files.exists(failed)) return new Sweep.Outcome(cell, null, false, Files.readString(failed, StandardCharsets.UTF_8).strip());
        return new Sweep.Outcome(cell, null, false, json + ": not written (the worker that had it stopped)");
    }

    /** A worker's part: each unit it is given, with the model, the stats and the base model's run held from one unit to the next. */
    private record WorkTasks(SweepSpec spec, boolean progress) implements Engine.TaskFactory<Sweep.WorkUnit> {
        @Override
        public Engine.Task<Sweep.WorkUnit> open() throws IOException {
            Sweep.Options options = spec.options();
            Sweep.Worker worker = new Sweep.Worker(options);
            return new Engine.Task<>() {
                @Override
                public void run(Sweep.WorkUnit unit) throws IOException {
                    for (Sweep.Outcome outcome : worker.run(unit, new WorkerLog(progress))) {
                        if (!outcome.failed()) continue;
                        byte[] line = (outcome.error() + "\n").getBytes(StandardCharsets.UTF_8);
                        AtomicOutput.write(failedFile(options, outcome.cell()), out -> out.write(line));
                    }
                }

                @Override
                public void close() throws IOException {
                    worker.close();
                }
            };
        }
    }

    /** What a worker tells of its progress: a line per step on its standard error (a cluster's worker log), unless quiet. */
    private record WorkerLog(boolean progress) implements Sweep.Listener {
        @Override
        public void calibrating(long done, long total, String stage) {}

        @Override
        public void working(Sweep.Cell cell, String step) {
            if (progress) System.err.printf("  %s: %s%n", cell.label(), step);
        }

        @Override
        public void redoing(Path file, String reason) {
            System.err.printf("%s is made again: %s%n", file, reason);
        }

        @Override
        public void cellDone(Sweep.Outcome outcome, int done, int total) {}
    }
}
