package jquant.distributed;

import jquant.formats.AtomicOutput;
import jquant.reports.EvalResult;
import jquant.reports.Evaluation;
import jquant.runtime.KernelChoice;
import jquant.runtime.PackedModelLoader;

import java.io.IOException;
import java.io.InputStream;
import java.io.ObjectInputStream;
import java.io.ObjectOutputStream;
import java.io.Serial;
import java.io.Serializable;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.stream.IntStream;

/**
 * {@code jquant eval --shards N} on an {@link Engine}: the text's windows cut into N runs, each scored by a worker
 * ({@link Evaluation#part}) and left in a folder beside the result, then summed here in window order
 * ({@link Evaluation#combine}), so the figures are those of one process's evaluation, digit for digit. The folder
 * of parts is deleted once the result is written, whole or not at all.
 */
public final class ShardedEvaluation {
    private ShardedEvaluation() {}

    /**
     * Evaluates {@code request} in {@code shards} parts on {@code engine}, writes the result to {@code result} and
     * returns it. The parts go through the folder {@code <result>.parts}, which the workers must share with this JVM.
     * The request must not be {@link Evaluation.Request#layerwise}.
     */
    public static EvalResult run(Evaluation.Request request, int shards, Engine engine, Path result) throws IOException {
        if (shards < 1) throw new IllegalArgumentException("shards must be at least 1, got " + shards);
        if (request.layerwise()) throw new IllegalArgumentException("a layerwise evaluation goes through every window at once: it has no shards");
        long start = System.nanoTime();
        Path parts = result.resolveSibling(result.getFileName() + ".parts").toAbsolutePath();
        if (Files.isDirectory(parts)) deleteParts(parts);  // left by a run that was killed
        Files.createDirectories(parts);
        try {
            engine.forEach("jquant eval", IntStream.range(0, shards).boxed().toList(), Integer.class, new PartTasks(RequestSpec.of(request), shards,
                    parts.toString()));
            List<Evaluation.Part> all = new ArrayList<>();
            for (int i = 0; i < shards; i++) all.add(read(parts.resolve(partName(i, shards))));
            all.sort(Comparator.comparingInt(Evaluation.Part::index));
            EvalResult r = Evaluation.combine(request, all, (System.nanoTime() - start) / 1e9);
            r.write(result);
            return r;
        } finally {
            deleteParts(parts);
        }
    }

    private static void deleteParts(Path parts) throws IOException {
        try (var files = Files.list(parts)) {
            for (Path f : files.toList()) Files.delete(f);
        }
        Files.delete(parts);
    }

    private static String partName(int index, int shards) {
        return "part-" + index + "-of-" + shards;
    }

    private static Evaluation.Part read(Path file) throws IOException {
        try (InputStream in = Files.newInputStream(file); ObjectInputStream objects = new ObjectInputStream(in)) {
            return (Evaluation.Part) objects.readObject();
        } catch (ClassNotFoundException e) {
            throw new IOException(file + ": not a part of an evaluation", e);
        }
    }

    /** A worker's shards: each scored and left, whole, in the folder of parts. */
    private record PartTasks(RequestSpec spec, int shards, String folder) implements Engine.TaskFactory<Integer> {
        @Override
        public Engine.Task<Integer> open() {
            return new Engine.Task<>() {
                @Override
                public void run(Integer shard) throws IOException {
                    Evaluation.Part part = Evaluation.part(spec.request(), shard, shards, (done, total, where) -> {});
                    AtomicOutput.write(Path.of(folder, partName(shard, shards)), out -> {
                        ObjectOutputStream objects = new ObjectOutputStream(out);
                        objects.writeObject(part);
                        objects.flush();
                    });
                }

                @Override
                public void close() {}
            };
        }
    }

    /**
     * {@link Evaluation.Request} as it travels to the workers: paths as strings (a {@link Path} does not serialize), as
     * given, so that the result names the files as a one-process evaluation does; a cluster's workers need them absolute.
     */
    record RequestSpec(String model, String data, int ctx, String base, String tokenizer, PackedModelLoader.Mode mode, KernelChoice kernels,
                       String series) implements Serializable {
        @Serial
        private static final long serialVersionUID = 1L;

        static RequestSpec of(Evaluation.Request r) {
            return new RequestSpec(r.model().toString(), r.data().toString(), r.ctx(), r.base() == null ? null : r.base().toString(),
                    r.tokenizer() == null ? null : r.tokenizer().toString(), r.mode(), r.kernels(), r.series());
        }

        Evaluation.Request request() {
            return Evaluation.Request.of(Path.of(model), Path.of(data)).ctx(ctx).base(base == null ? null : Path.of(base))
                    .tokenizer(tokenizer == null ? null : Path.of(tokenizer)).mode(mode).kernels(kernels).series(series);
        }
    }
}
