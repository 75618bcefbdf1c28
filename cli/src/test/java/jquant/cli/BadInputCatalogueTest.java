package jquant.cli;

import jquant.formats.gguf.GgufFile;
import jquant.formats.gguf.GgufTensorInfo;
import jquant.testsupport.SharedFiles;
import jquant.testsupport.Slow;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestFactory;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.io.PrintStream;
import java.io.ByteArrayOutputStream;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

import static jquant.cli.CliTest.run;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * Every kind of bad input issue 12 lists, tried on every command it applies to. Each case asserts the
 * exit code (1 bad input, 2 usage), a single stderr line {@code jquant: <file>: <reason>} without Java
 * class names, and that the workspace is byte for byte as before: inputs untouched, no output and no
 * temporary file beside it. The counts are printed at the end.
 */
@Slow
class BadInputCatalogueTest {
    @TempDir
    static Path ws;
    static Path model, tok, text, stats, plan, wholeFilePlan, jqw, ternary, evalJson, latin1, folder, fifo, hf, ggufOverlap, ggufRetyped, damagedStats,
            symlinkToText, symlinkToStats, hardLinkToText, linkLoop, linkToNothing, otherModels;
    static final Set<String> kinds = new TreeSet<>();
    static final Set<String> commands = new TreeSet<>();
    static int cases;

    record Case(String kind, int exit, String file, String reason, String... args) {}

    @BeforeAll
    static void workspace() throws Exception {
        model = Files.copy(SharedFiles.model("stories260K.bin"), ws.resolve("stories260K.bin"));
        tok = Files.copy(SharedFiles.model("tok512.bin"), ws.resolve("tok512.bin"));
        text = Files.copy(Path.of("../models/stories260K/tinystories-calibration.txt"), ws.resolve("text.txt"));
        stats = ws.resolve("stats.gguf");
        plan = ws.resolve("plan.json");
        wholeFilePlan = ws.resolve("whole-file-plan.json");
        jqw = ws.resolve("model.jqw");
        ternary = ws.resolve("ternary.gguf");
        evalJson = ws.resolve("report.json");
        ok("calibrate", model.toString(), "--data", text.toString(), "--tokens", "128", "--sample", "32", "--out", stats.toString());
        ok("allocate", model.toString(), "--budget", "5", "--stats", stats.toString(), "--scope", "TENSOR", "--out", plan.toString());
        ok("pack", model.toString(), "--plan", plan.toString(), "--stats", stats.toString(), "--out", jqw.toString());
        ok("allocate", model.toString(), "--budget", "5", "--whole-file", "--stats", stats.toString(), "--out", wholeFilePlan.toString());
        ok("ternarize", model.toString(), "--type", "TQ2_0", "--out", ternary.toString());
        ok("eval", jqw.toString(), "--data", text.toString(), "--ctx", "64", "--mode", "NPU", "--out", evalJson.toString());
        Path plain = Files.createFile(ws.resolve("plain"));
        for (Path out : List.of(stats, plan, jqw, ternary, evalJson)) {
            assertThat(Files.getPosixFilePermissions(out)).as("mode of " + out).isEqualTo(Files.getPosixFilePermissions(plain));
        }

        latin1 = Files.write(ws.resolve("latin1.txt"), "Once upon a time, a caf\u00e9.".getBytes(StandardCharsets.ISO_8859_1));
        folder = Files.createDirectory(ws.resolve("folder"));
        fifo = ws.resolve("pipe");
        assertThat(new ProcessBuilder("mkfifo", fifo.toString()).start().waitFor()).isZero();
        symlinkToText = Files.createSymbolicLink(ws.resolve("link-to-text.txt"), text);
        symlinkToStats = Files.createSymbolicLink(ws.resolve("link-to-stats.gguf"), Path.of("stats.gguf"));
        hardLinkToText = Files.createLink(ws.resolve("hardlink.txt"), text);
        linkLoop = Files.createSymbolicLink(ws.resolve("loop.bin"), Path.of("loop.bin"));
        linkToNothing = Files.createSymbolicLink(ws.resolve("dangling.bin"), Path.of("deleted.bin"));

        otherModels = Files.createDirectory(ws.resolve("other-models"));
        Files.copy(model, otherModels.resolve("stories260K.bin"));
        Files.copy(SharedFiles.model("stories260K-Q8_0.gguf"), otherModels.resolve("stories260K-Q8_0.gguf"));
        Files.copy(tok, otherModels.resolve("tok512.bin"));

        hf = Files.createDirectory(ws.resolve("hf-fewer-layers"));
        try (var files = Files.list(SharedFiles.model("stories260K-hf"))) {
            for (Path f : files.toList()) Files.copy(f, hf.resolve(f.getFileName()));
        }
        String config = Files.readString(hf.resolve("config.json"));
        Files.writeString(hf.resolve("config.json"), config.replaceFirst("\"num_hidden_layers\": 5", "\"num_hidden_layers\": 4"));
        assertThat(Files.readString(hf.resolve("config.json"))).contains("\"num_hidden_layers\": 4");

        Path gguf = SharedFiles.model("stories260K-f32.gguf");
        ggufOverlap = Files.write(ws.resolve("overlap.gguf"), editTensorTable(gguf, "blk.0.attn_k.weight", null, -1));
        ggufRetyped = Files.write(ws.resolve("retyped.gguf"), editTensorTable(gguf, "blk.0.attn_q.weight", 1, 0));

        byte[] s = Files.readAllBytes(stats);
        try (GgufFile f = GgufFile.open(stats)) {
            s[(int) f.dataOffset() + 3] ^= 0x01;
        }
        damagedStats = Files.write(ws.resolve("damaged-stats.gguf"), s);
    }

    private static void ok(String... args) {
        CliTest.Result r = run(args);
        assertThat(r.code()).as(String.join(" ", args) + "\n" + r.err()).isZero();
    }

    /**
     * {@code gguf} with one tensor table entry edited: its ggml type set to {@code type} (when not null), or
     * (offsetDelta -1) its offset moved back onto the tensor before it.
     */
    private static byte[] editTensorTable(Path gguf, String name, Integer type, long offsetDelta) throws IOException {
        byte[] bytes = Files.readAllBytes(gguf);
        GgufTensorInfo info;
        long previousOffset = 0;
        try (GgufFile f = GgufFile.open(gguf)) {
            info = f.tensorInfos().stream().filter(t -> t.name().equals(name)).findFirst().orElseThrow();
            for (GgufTensorInfo t : f.tensorInfos()) {
                if (t.offset() < info.offset()) previousOffset = Math.max(previousOffset, t.offset());
            }
        }
        byte[] key = ByteBuffer.allocate(8 + name.length()).order(ByteOrder.LITTLE_ENDIAN).putLong(name.length())
                .put(name.getBytes(StandardCharsets.UTF_8)).array();
        int at = indexOf(bytes, key) + key.length + 4 + 8 * info.dims().length;
        ByteBuffer b = ByteBuffer.wrap(bytes).order(ByteOrder.LITTLE_ENDIAN);
        if (type != null) b.putInt(at, type);
        if (offsetDelta < 0) b.putLong(at + 4, previousOffset + 32);
        return bytes;
    }

    private static int indexOf(byte[] haystack, byte[] needle) {
        outer:
        for (int i = 0; i + needle.length <= haystack.length; i++) {
            for (int j = 0; j < needle.length; j++) if (haystack[i + j] != needle[j]) continue outer;
            return i;
        }
        throw new IllegalStateException("not found");
    }

    static List<Case> catalogue() {
        String m = model.toString(), t = text.toString(), s = stats.toString(), p = plan.toString(), out = ws.resolve("out.bin").toString();
        List<Case> c = new ArrayList<>();
        // An output that is an input, given explicitly.
        String in = "is an input of this run";
        c.add(new Case("output is an explicit input", 1, "text.txt", in, "calibrate", m, "--data", t, "--out", t));
        c.add(new Case("output is an explicit input", 1, "stories260K.bin", in, "calibrate", m, "--data", t, "--out", m));
        c.add(new Case("output is an explicit input", 1, "stats.gguf", in, "allocate", m, "--budget", "5", "--stats", s, "--out", s));
        c.add(new Case("output is an explicit input", 1, "stories260K.bin", in, "allocate", m, "--budget", "5", "--out", m));
        c.add(new Case("output is an explicit input", 1, "plan.json", in, "pack", m, "--plan", p, "--out", p));
        c.add(new Case("output is an explicit input", 1, "stats.gguf", in, "pack", m, "--plan", p, "--stats", s, "--out", s));
        c.add(new Case("output is an explicit input", 1, "stories260K.bin", in, "ternarize", m, "--out", m));
        c.add(new Case("output is an explicit input", 1, "ternary.gguf", in, "repack", ternary.toString(), "--type", "t2p", "--out", ternary.toString()));
        c.add(new Case("output is an explicit input", 1, "ternary.gguf", in, "pack", ternary.toString(), "--type", "T2P", "--out", ternary.toString()));
        c.add(new Case("output is an explicit input", 1, "text.txt", in, "eval", m, "--data", t, "--out", t));
        c.add(new Case("output is an explicit input", 1, "report.json", in, "report", evalJson.toString(), "--out", ws.toString()));
        // sweep writes into a folder: one holding any input is refused.
        String sweepOut = ws.resolve("sweep").toString();
        c.add(new Case("output is an explicit input", 1, ws.getFileName().toString(), "holds an input of this run", "sweep", m, "--data", t, "--out", ws.toString()));
        c.add(new Case("output is an explicit input", 1, "other-models", "holds an input of this run", "sweep", m, "--data", t, "--compare",
                otherModels.resolve("stories260K-Q8_0.gguf").toString(), "--out", otherModels.toString()));
        // An output that is an input found implicitly: the tokenizer beside a llama2.c model, a Hugging Face folder's files.
        String tk = tok.toString();
        c.add(new Case("output is an implicit input", 1, "tok512.bin", in, "calibrate", m, "--data", t, "--out", tk));
        c.add(new Case("output is an implicit input", 1, "tok512.bin", in, "allocate", m, "--budget", "5", "--out", tk));
        c.add(new Case("output is an implicit input", 1, "tok512.bin", in, "pack", m, "--plan", p, "--out", tk));
        c.add(new Case("output is an implicit input", 1, "tok512.bin", in, "ternarize", m, "--out", tk));
        c.add(new Case("output is an implicit input", 1, "tok512.bin", in, "eval", m, "--data", t, "--out", tk));
        c.add(new Case("output is an implicit input", 1, "config.json", in, "calibrate", hf.toString(), "--data", t, "--out", hf.resolve("config.json").toString()));
        c.add(new Case("output is an implicit input", 1, "tokenizer.model", in, "allocate", hf.toString(), "--budget", "5", "--out", hf.resolve("tokenizer.model").toString()));
        // The same through a symbolic link, '..' and a hard link.
        c.add(new Case("output reaches an input by a link or '..'", 1, "link-to-text.txt", in, "calibrate", m, "--data", t, "--out", symlinkToText.toString()));
        c.add(new Case("output reaches an input by a link or '..'", 1, "link-to-stats.gguf", in, "allocate", m, "--budget", "5", "--stats", s, "--out", symlinkToStats.toString()));
        c.add(new Case("output reaches an input by a link or '..'", 1, "no-such-folder/../text.txt", in, "calibrate", m, "--data", t, "--out", ws.resolve("no-such-folder/../text.txt").toString()));
        c.add(new Case("output reaches an input by a link or '..'", 1, "hardlink.txt", in, "eval", m, "--data", t, "--out", hardLinkToText.toString()));
        // An output that cannot be a file.
        c.add(new Case("output is a folder or a pipe", 1, "folder", "is a folder", "pack", m, "--plan", p, "--out", folder.toString()));
        c.add(new Case("output is a folder or a pipe", 1, "folder", "is a folder", "calibrate", m, "--data", t, "--out", folder.toString()));
        c.add(new Case("output is a folder or a pipe", 1, "pipe", "not a regular file", "allocate", m, "--budget", "5", "--out", fifo.toString()));
        c.add(new Case("output is a folder or a pipe", 1, "report.json", "is a file", "report", evalJson.toString(), "--out", evalJson.toString()));
        c.add(new Case("output is a folder or a pipe", 1, "report.json", "is not a folder", "sweep", m, "--data", t, "--out", evalJson.toString()));
        // A named pipe where a file is read: refused before opening (opening would block for ever).
        String f = fifo.toString(), pipe = "not a regular file";
        for (String[] args : List.of(new String[] {"inspect", f}, new String[] {"tokenize", f, "--file", t}, new String[] {"run", f, "-n", "1"},
                new String[] {"eval", f, "--data", t}, new String[] {"calibrate", f, "--data", t, "--out", out},
                new String[] {"allocate", f, "--budget", "5", "--out", out}, new String[] {"pack", f, "--plan", p, "--out", out},
                new String[] {"verify", f, "--source", m}, new String[] {"ternarize", f, "--out", out}, new String[] {"repack", f, "--type", "t2p", "--out", out},
                new String[] {"calibrate", m, "--data", f, "--out", out}, new String[] {"eval", m, "--data", f},
                new String[] {"allocate", m, "--budget", "5", "--stats", f, "--out", out}, new String[] {"pack", m, "--plan", f, "--out", out},
                new String[] {"report", f, "--out", ws.resolve("r").toString()}, new String[] {"tokenize", m, "--file", f},
                new String[] {"sweep", f, "--data", t, "--out", sweepOut}, new String[] {"sweep", m, "--data", f, "--out", sweepOut})) {
            c.add(new Case("a named pipe as an input", 1, "pipe", pipe, args));
        }
        // A folder where a file is read.
        String d = folder.toString(), dir = "is a folder";
        for (String[] args : List.of(new String[] {"calibrate", m, "--data", d, "--out", out}, new String[] {"eval", m, "--data", d},
                new String[] {"tokenize", m, "--file", d}, new String[] {"allocate", m, "--budget", "5", "--stats", d, "--out", out},
                new String[] {"pack", m, "--plan", d, "--out", out}, new String[] {"report", d, "--out", ws.resolve("r").toString()})) {
            c.add(new Case("a folder as an input file", 1, "folder", dir, args));
        }
        // Missing inputs.
        String gone = ws.resolve("missing.bin").toString();
        for (String[] args : List.of(new String[] {"inspect", gone}, new String[] {"tokenize", gone, "--file", t}, new String[] {"run", gone},
                new String[] {"eval", gone, "--data", t}, new String[] {"calibrate", gone, "--data", t, "--out", out},
                new String[] {"allocate", gone, "--budget", "5", "--out", out}, new String[] {"pack", gone, "--plan", p, "--out", out},
                new String[] {"verify", gone, "--source", m}, new String[] {"ternarize", gone, "--out", out},
                new String[] {"repack", gone, "--type", "t2p", "--out", out}, new String[] {"report", gone, "--out", ws.resolve("r").toString()},
                new String[] {"sweep", gone, "--data", t, "--out", sweepOut}, new String[] {"sweep", m, "--data", t, "--compare", gone, "--out", sweepOut})) {
            c.add(new Case("a missing input", 1, "missing.bin", "no such file", args));
        }
        // A symbolic link in a loop, or to nothing, named as such (a loop was "no such file or folder").
        String loop = linkLoop.toString(), dangling = linkToNothing.toString();
        for (String[] args : List.of(new String[] {"inspect", loop}, new String[] {"run", loop, "-n", "1"}, new String[] {"eval", m, "--data", loop},
                new String[] {"calibrate", loop, "--data", t, "--out", out}, new String[] {"tokenize", m, "--file", loop})) {
            c.add(new Case("a symbolic link loop as an input", 1, "loop.bin", "a symbolic link loop", args));
        }
        c.add(new Case("a symbolic link to nothing as an input", 1, "dangling.bin", "a symbolic link to a missing file (deleted.bin)", "inspect", dangling));
        c.add(new Case("a symbolic link to nothing as an input", 1, "dangling.bin", "a symbolic link to a missing file (deleted.bin)", "eval", m, "--data", dangling));
        // An output place that cannot be written (/sys takes no new file, even from root), refused before any work, naming the output as given.
        String denied = "permission denied";
        for (String[] args : List.of(new String[] {"calibrate", m, "--data", t, "--out", "/sys/jquant-stats.gguf"},
                new String[] {"allocate", m, "--budget", "5", "--out", "/sys/jquant-plan.json"}, new String[] {"pack", m, "--plan", p, "--out", "/sys/jquant.jqw"},
                new String[] {"eval", m, "--data", t, "--out", "/sys/jquant-eval.json"}, new String[] {"convert", m, "--type", "f16", "--out", "/sys/no-such-folder/jquant.gguf"},
                new String[] {"ternarize", m, "--out", "/sys/jquant.gguf"}, new String[] {"repack", ternary.toString(), "--type", "t2p", "--out", "/sys/jquant.gguf"},
                new String[] {"report", evalJson.toString(), "--out", "/sys/jquant-report"}, new String[] {"sweep", m, "--data", t, "--out", "/sys/jquant-sweep"})) {
            c.add(new Case("an output place that cannot be written", 1, "/sys/", denied, args));
        }
        c.add(new Case("an output name longer than a file name may be", 1, "mmmm", "file name too long", "allocate", m, "--budget", "5", "--out", ws.resolve("m".repeat(256)).toString()));
        // A repack that would store nothing in the layout asked for (a float model whose shapes fit no ternary block layout).
        c.add(new Case("a repack that repacks nothing", 1, "stories260K-f32.gguf", "nothing to repack", "repack", SharedFiles.model("stories260K-f32.gguf").toString(), "--type", "t2p", "--out", out));
        // A memory bound the run cannot fit: refused before any work.
        c.add(new Case("a memory bound the run cannot fit", 1, "stories260K.bin", "JQUANT_JAVA_OPTS=-Xmx", "calibrate", m, "--data", t, "--second-moments", "--memory", "64k", "--out", out));
        // A folder given as a Hugging Face model that holds other models' files: named (it said only that there was no model.safetensors).
        String om = otherModels.toString(), holds = "no model.safetensors or model.safetensors.index.json; it holds stories260K-Q8_0.gguf, "
                + "stories260K.bin: pass one of those files";
        for (String[] args : List.of(new String[] {"ternarize", om, "--out", out}, new String[] {"inspect", om}, new String[] {"run", om, "-n", "1"},
                new String[] {"tokenize", om, "-p", "Once"}, new String[] {"repack", om, "--type", "t2p", "--out", out})) {
            c.add(new Case("a folder of other models' files as a model", 1, "other-models", holds, args));
        }
        // Text that is not UTF-8.
        String l = latin1.toString(), utf = "not valid UTF-8";
        c.add(new Case("text that is not UTF-8", 1, "latin1.txt", utf, "calibrate", m, "--data", l, "--out", out));
        c.add(new Case("text that is not UTF-8", 1, "latin1.txt", utf, "eval", m, "--data", l));
        c.add(new Case("text that is not UTF-8", 1, "latin1.txt", utf, "tokenize", m, "--file", l));
        c.add(new Case("text that is not UTF-8", 1, "latin1.txt", utf, "sweep", m, "--data", l, "--out", sweepOut));
        c.add(new Case("text that is not UTF-8", 1, "latin1.txt", utf, "sweep", m, "--data", t, "--calibration-data", l, "--out", sweepOut));
        // A Hugging Face config with fewer layers than its weights.
        String h = hf.toString(), unused = "not used by the 4-layer model";
        for (String[] args : List.of(new String[] {"inspect", h}, new String[] {"run", h, "-n", "1"}, new String[] {"eval", h, "--data", t},
                new String[] {"calibrate", h, "--data", t, "--out", out}, new String[] {"allocate", h, "--budget", "5", "--out", out},
                new String[] {"ternarize", h, "--out", out}, new String[] {"tokenize", h, "--file", t})) {
            c.add(new Case("config with fewer layers than the weights", 1, "hf-fewer-layers", unused, args));
        }
        // GGUF tensor tables edited: overlapping tensors, a type changed to a smaller one that still fits.
        for (Path g : List.of(ggufOverlap, ggufRetyped)) {
            String kind = g == ggufOverlap ? "GGUF tensors that overlap" : "GGUF tensor type changed";
            String why = g == ggufOverlap ? "overlaps tensor" : "unexplained gap";
            String gs = g.toString(), name = g.getFileName().toString();
            for (String[] args : List.of(new String[] {"inspect", gs}, new String[] {"run", gs, "-n", "1"}, new String[] {"eval", gs, "--data", t},
                    new String[] {"calibrate", gs, "--data", t, "--out", out}, new String[] {"allocate", gs, "--budget", "5", "--out", out},
                    new String[] {"ternarize", gs, "--out", out}, new String[] {"repack", gs, "--type", "t2p", "--out", out})) {
                c.add(new Case(kind, 1, name, why, args));
            }
        }
        // A compare file of another model (its shape), and two compare files that would be one series.
        String sixM = SharedFiles.model("tinystories-6M/tinystories-6M-Q8_0.gguf").toString();
        c.add(new Case("a compare file of another model", 1, "tinystories-6M-Q8_0.gguf", "is not a file of", "sweep", m, "--data", t, "--compare", sixM,
                "--out", sweepOut));
        c.add(new Case("usage: options that do not go together", 2, "--compare", "would be series 'tinystories-6M-Q8_0'", "sweep", m, "--data", t,
                "--compare", sixM + "," + sixM, "--out", sweepOut));
        // A stats file changed after it was written.
        String ds = damagedStats.toString(), crc = "checksum mismatch";
        c.add(new Case("stats file changed", 1, "damaged-stats.gguf", crc, "allocate", m, "--budget", "5", "--stats", ds, "--out", out));
        c.add(new Case("stats file changed", 1, "damaged-stats.gguf", crc, "pack", m, "--plan", p, "--stats", ds, "--out", out));
        c.add(new Case("stats file changed", 1, "damaged-stats.gguf", crc, "verify", jqw.toString(), "--source", m, "--stats", ds));
        c.add(new Case("stats file changed", 1, "damaged-stats.gguf", crc, "inspect", ds));
        // Stats with no α searched for the budget asked (calibrate --budgets, default 3,4,5,6,8).
        c.add(new Case("stats without α for the budget", 1, "stats.gguf", "not for 4.5", "allocate", m, "--budget", "4.5", "--stats", s, "--out", out));
        // Usage errors: exit 2, one line naming the option.
        String usage = "see 'jquant";
        c.add(new Case("usage: value out of range", 2, "--tokens", usage, "calibrate", m, "--data", t, "--tokens", "0", "--out", out));
        c.add(new Case("usage: value out of range", 2, "--ctx", usage, "eval", m, "--data", t, "--ctx", "0"));
        c.add(new Case("usage: value out of range", 2, "--ctx", usage, "eval", m, "--data", t, "--ctx", "1024"));
        c.add(new Case("usage: value out of range", 2, "--n-predict", usage, "run", m, "-n", "-1"));
        c.add(new Case("usage: value out of range", 2, "--temperature", usage, "run", m, "--temperature", "NaN"));
        c.add(new Case("usage: value out of range", 2, "--budget", usage, "allocate", m, "--budget", "0", "--out", out));
        c.add(new Case("usage: value out of range", 2, "--budgets", usage, "calibrate", m, "--data", t, "--budgets", "4,9", "--out", out));
        c.add(new Case("usage: value out of range", 2, "--budgets", usage, "sweep", m, "--data", t, "--budgets", "0", "--out", sweepOut));
        c.add(new Case("usage: value out of range", 2, "--ctx", usage, "sweep", m, "--data", t, "--ctx", "1", "--out", sweepOut));
        c.add(new Case("usage: value out of range", 2, "--tokens", usage, "bench", "decode", m, "--tokens", "0"));
        c.add(new Case("usage: value out of range", 2, "--thread-counts", usage, "bench", "decode", m, "--thread-counts", "1,0"));
        c.add(new Case("usage: value out of range", 2, "--ctx", usage, "bench", "prefill", m, "--data", t, "--ctx", "1"));
        c.add(new Case("usage: value out of range", 2, "--repeats", usage, "bench", "ttft", m, "--data", t, "--repeats", "0"));
        c.add(new Case("usage: value out of range", 2, "--alpha", usage, "allocate", m, "--budget", "5", "--stats", s, "--alpha", "1.5", "--out", out));
        c.add(new Case("usage: value out of range", 2, "--budget", usage, "allocate", m, "--budget", "9", "--stats", s, "--out", out));
        c.add(new Case("usage: value out of range", 2, "--budget", usage, "allocate", m, "--budget", "17", "--whole-file", "--stats", s, "--out", out));
        c.add(new Case("usage: options that do not go together", 2, "--whole-file", usage, "allocate", m, "--budget", "5", "--whole-file", "--out", out));
        c.add(new Case("usage: options that do not go together", 2, "--whole-file", usage, "allocate", m, "--budget", "5", "--whole-file", "--stats", s,
                "--scope", "tensor", "--out", out));
        c.add(new Case("usage: options that do not go together", 2, "--keep", usage, "pack", m, "--plan", wholeFilePlan.toString(), "--stats", s,
                "--keep", "head", "--out", out));
        c.add(new Case("usage: unknown name", 2, "--type", usage, "ternarize", m, "--type", "q4_0", "--out", out));
        c.add(new Case("usage: unknown name", 2, "--type", usage, "repack", ternary.toString(), "--type", "nope", "--out", out));
        c.add(new Case("usage: unknown name", 2, "--keep", usage, "pack", m, "--plan", p, "--keep", "tail", "--out", out));
        c.add(new Case("usage: unknown name", 2, "--scope", usage, "allocate", m, "--budget", "5", "--scope", "layer", "--out", out));
        c.add(new Case("usage: unknown name", 2, "--mode", usage, "eval", m, "--data", t, "--mode", "fast"));
        c.add(new Case("usage: unknown name", 2, "--kernels", usage, "run", m, "--kernels", "gpu"));
        c.add(new Case("usage: unknown name", 2, "--rounding", usage, "pack", m, "--plan", p, "--stats", s, "--rounding", "awq", "--out", out));
        c.add(new Case("usage: unknown name", 2, "--smoothing", usage, "allocate", m, "--budget", "5", "--stats", s, "--smoothing", "awq", "--out", out));
        c.add(new Case("usage: unknown name", 2, "--methods", usage, "sweep", m, "--data", t, "--methods", "edgeflow,awq", "--out", sweepOut));
        c.add(new Case("usage: unknown name", 2, "--keep-type", usage, "sweep", m, "--data", t, "--keep-type", "q4", "--out", sweepOut));
        c.add(new Case("usage: unknown name", 2, "--runner", usage, "sweep", m, "--data", t, "--runner", "spark", "--out", sweepOut));
        c.add(new Case("usage: value out of range", 2, "--workers", usage, "sweep", m, "--data", t, "--workers", "0", "--out", sweepOut));
        c.add(new Case("usage: value out of range", 2, "--shards", usage, "eval", m, "--data", t, "--shards", "0"));
        c.add(new Case("usage: value out of range", 2, "--flink-master", usage, "sweep", m, "--data", t, "--runner", "flink", "--flink-master", "jobmanager", "--out", sweepOut));
        c.add(new Case("usage: options that do not go together", 2, "--flink-master", usage, "eval", m, "--data", t, "--flink-master", "jm:8081"));
        c.add(new Case("usage: options that do not go together", 2, "--layerwise", usage, "eval", m, "--data", t, "--layerwise", "--shards", "2"));
        c.add(new Case("usage: options that do not go together", 2, "--out", usage, "eval", m, "--data", t, "--runner", "flink", "--flink-master", "jm:8081"));
        return c;
    }

    @TestFactory
    @Timeout(value = 10, unit = TimeUnit.MINUTES, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)  // a reader that opens the pipe would block for ever
    Stream<DynamicTest> everyBadInputIsOneLineAndChangesNothing() {
        return catalogue().stream().map(c -> DynamicTest.dynamicTest(c.kind() + ": " + String.join(" ", c.args()), () -> {
            Map<String, String> before = snapshot();
            CliTest.Result r = run(c.args());
            String line = r.err().strip();
            assertThat(r.code()).as(r.err()).isEqualTo(c.exit());
            assertThat(line).doesNotContain("\n").startsWith("jquant: ").contains(c.file()).contains(c.reason())
                    .doesNotContainPattern("\\b(java|javax|com|jdk|sun)\\.[a-z]+\\.|Exception|Error:");
            if (c.exit() == 1) assertThat(line).containsPattern("^jquant: \\S*" + java.util.regex.Pattern.quote(c.file()) + "\\S*: ");
            assertThat(snapshot()).isEqualTo(before);
            kinds.add(c.kind());
            commands.add(c.args()[0]);
            cases++;
        }));
    }

    @AfterAll
    static void counts() {
        System.out.printf("bad-input catalogue: %d cases, %d kinds of bad input, %d commands (%s)%n", cases, kinds.size(), commands.size(), String.join(", ", commands));
    }

    /** A run of {@code args} and what it printed on the process's stderr, where the progress bars go. */
    private record Printed(CliTest.Result result, String progress) {}

    private static Printed runCapturingProgress(String... args) {
        PrintStream err = System.err;
        ByteArrayOutputStream captured = new ByteArrayOutputStream();
        System.setErr(new PrintStream(captured, true, StandardCharsets.UTF_8));
        try {
            return new Printed(run(args), captured.toString(StandardCharsets.UTF_8));
        } finally {
            System.setErr(err);
        }
    }

    @Test
    void quietRunsPrintNoProgressOnlyTheResult() throws Exception {
        Printed p = runCapturingProgress("pack", model.toString(), "--plan", plan.toString(), "--stats", stats.toString(), "--quiet", "--out",
                ws.resolve("quiet.jqw").toString());
        assertThat(p.result().code()).as(p.result().err()).isZero();
        assertThat(p.progress() + p.result().err()).isEmpty();
        assertThat(p.result().out()).startsWith("wrote ");
        Files.delete(ws.resolve("quiet.jqw"));
    }

    /** An output place that cannot be written is found before any work: no progress bar starts (it was found after calibrating). */
    @Test
    void anUnwritableOutputIsFoundBeforeAnyWork() {
        Printed p = runCapturingProgress("calibrate", model.toString(), "--data", text.toString(), "--out", "/sys/jquant-stats.gguf");
        assertThat(p.result().code()).isEqualTo(1);
        assertThat(p.result().err().strip()).isEqualTo("jquant: /sys/jquant-stats.gguf: permission denied");
        assertThat(p.progress()).isEmpty();
    }

    /** eval checks its window against the models before its progress bar starts (it printed three "eval 0%" bars, then the error, exit 1). */
    @Test
    void aWindowLongerThanTheModelIsAUsageErrorBeforeAnyProgress() {
        for (String[] args : List.of(new String[] {"eval", jqw.toString(), "--data", text.toString(), "--ctx", "1024"},
                new String[] {"eval", jqw.toString(), "--data", text.toString(), "--ctx", "1024", "--base", model.toString()},
                new String[] {"eval", jqw.toString(), "--data", text.toString(), "--ctx", "1024", "--layerwise"})) {
            Printed p = runCapturingProgress(args);
            assertThat(p.result().code()).as(p.result().err()).isEqualTo(2);
            assertThat(p.result().err().strip()).isEqualTo("jquant: --ctx 1024 exceeds the model's maximum of 512 positions (see 'jquant eval --help')");
            assertThat(p.progress()).as(String.join(" ", args)).isEmpty();
        }
    }

    /** Every file under the workspace: its bytes' SHA-256, or what it is when not a regular file. */
    private static Map<String, String> snapshot() throws Exception {
        Map<String, String> files = new TreeMap<>();
        MessageDigest sha = MessageDigest.getInstance("SHA-256");
        try (var walk = Files.walk(ws)) {
            for (Path p : walk.toList()) {
                String key = ws.relativize(p).toString();
                if (Files.isSymbolicLink(p)) files.put(key, "link to " + Files.readSymbolicLink(p));
                else if (Files.isDirectory(p, LinkOption.NOFOLLOW_LINKS)) files.put(key, "folder");
                else if (Files.isRegularFile(p, LinkOption.NOFOLLOW_LINKS)) files.put(key, HexFormat.of().formatHex(sha.digest(Files.readAllBytes(p))));
                else files.put(key, "other");
            }
        }
        return files;
    }
}
