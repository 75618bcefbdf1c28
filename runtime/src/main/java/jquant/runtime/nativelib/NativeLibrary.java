package jquant.runtime.nativelib;

import static java.lang.foreign.ValueLayout.JAVA_INT;

import java.io.IOException;
import java.io.InputStream;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.invoke.MethodHandle;
import java.net.URL;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.Locale;
import java.util.Optional;

/**
 * jquant's C kernel library (runtime/src/main/c), loaded through {@code java.lang.foreign}. The Maven
 * build compiles it with the system C compiler when there is one and puts it among the runtime's
 * classes at {@link #resource()}; a build without a compiler (or with {@code -Djquant.native.skip})
 * leaves it out, and then every kernel is the Java one. From a jar the library is copied to a
 * temporary file first (a shared library cannot be mapped from inside a jar). The system property
 * {@code jquant.native.library=PATH} loads the library at PATH instead (one built apart from the jar,
 * say); a PATH where there is none leaves the Java kernels, as a build without a compiler does.
 *
 * <p>Loaded at most once per process; {@link #get()} gives it or says why not.
 */
public final class NativeLibrary {

    /** The library's interface version; a library built from other sources is refused. */
    static final int ABI = 13;

    private static final Linker LINKER = Linker.nativeLinker();
    private static volatile Loaded loaded;

    private final SymbolLookup symbols;
    private final String origin;
    private final int isas;

    private NativeLibrary(SymbolLookup symbols, String origin) {
        this.symbols = symbols;
        this.origin = origin;
        this.isas = (int) call(downcall("jq_isas", FunctionDescriptor.of(JAVA_INT)));
    }

    /** The library, or why there is none. */
    public record Loaded(Optional<NativeLibrary> library, String reason) {}

    /** The process's library, loaded on first use from {@code jquant.native.library} or else {@link #resource()}. */
    public static Loaded get() {
        Loaded l = loaded;
        if (l == null) {
            synchronized (NativeLibrary.class) {
                if (loaded == null) {
                    String path = System.getProperty("jquant.native.library");
                    loaded = path == null ? load(resource()) : loadFile(Path.of(path));
                }
                l = loaded;
            }
        }
        return l;
    }

    /** The class-path resource of this platform's library, e.g. {@code /jquant/runtime/native/linux-x86_64/libjqk.so}. */
    public static String resource() {
        String os = System.getProperty("os.name").toLowerCase(Locale.ROOT);
        String arch = System.getProperty("os.arch").toLowerCase(Locale.ROOT);
        String platform = (os.contains("mac") ? "macos" : os.contains("win") ? "windows" : "linux") + "-"
                + (arch.equals("amd64") || arch.equals("x86_64") ? "x86_64" : arch.equals("aarch64") || arch.equals("arm64") ? "aarch64" : arch);
        String file = os.contains("mac") ? "libjqk.dylib" : os.contains("win") ? "jqk.dll" : "libjqk.so";
        return "/jquant/runtime/native/" + platform + "/" + file;
    }

    /** Loads the library at class-path {@code resource}; any failure is a reason, not an exception. */
    static Loaded load(String resource) {
        URL url = NativeLibrary.class.getResource(resource);
        if (url == null) return new Loaded(Optional.empty(), "no native library for this platform (" + resource + " not built: no C compiler, or -Djquant.native.skip)");
        try {
            return loadFile(url.getProtocol().equals("file") ? Path.of(url.toURI()) : extract(url, resource));
        } catch (Exception e) {
            return new Loaded(Optional.empty(), "native library " + resource + " did not load: " + e);
        }
    }

    /** Loads the library file {@code file}; any failure is a reason, not an exception. */
    static Loaded loadFile(Path file) {
        if (!Files.isRegularFile(file)) return new Loaded(Optional.empty(), "no native library at " + file);
        try {
            NativeLibrary lib = new NativeLibrary(SymbolLookup.libraryLookup(file, Arena.global()), file.toString());
            int abi = (int) call(lib.downcall("jq_abi", FunctionDescriptor.of(JAVA_INT)));
            if (abi != ABI) return new Loaded(Optional.empty(), file + " has interface version " + abi + ", this jquant needs " + ABI);
            return new Loaded(Optional.of(lib), "loaded from " + file);
        } catch (RuntimeException | LinkageError e) {
            return new Loaded(Optional.empty(), "native library " + file + " did not load: " + e);
        }
    }

    private static Path extract(URL url, String resource) throws IOException {
        Path file = Files.createTempFile("jquant-", "-" + resource.substring(resource.lastIndexOf('/') + 1));
        file.toFile().deleteOnExit();
        try (InputStream in = url.openStream()) {
            Files.copy(in, file, StandardCopyOption.REPLACE_EXISTING);
        }
        return file;
    }

    /** Bits of the instruction sets this CPU runs among those built in ({@link NativeIsa#bit}). */
    int isas() { return isas; }

    /** Where the library was loaded from. */
    public String origin() { return origin; }

    /** A handle on {@code name}; heap arrays may be passed (the kernels are short and never call back). */
    MethodHandle downcall(String name, FunctionDescriptor signature) {
        MemorySegment symbol = symbols.find(name).orElseThrow(() -> new IllegalStateException(origin + " has no symbol " + name));
        return LINKER.downcallHandle(symbol, signature, Linker.Option.critical(true));
    }

    private static Object call(MethodHandle h) {
        try {
            return h.invoke();
        } catch (Throwable t) {
            throw new IllegalStateException("native call failed", t);
        }
    }
}
