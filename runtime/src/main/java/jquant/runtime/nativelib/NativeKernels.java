package jquant.runtime.nativelib;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * The C library's kernels for one instruction set, as Java methods. Each takes memory segments —
 * slices of a mapped file, or heap arrays wrapped by {@link MemorySegment#ofArray} (passed without a
 * copy: the calls are short and never call back) — and checks nothing: the Java classes that call
 * them check shapes first, as for their Java kernels.
 */
public final class NativeKernels {

    private final NativeIsa isa;
    private final String origin;
    private final MethodHandle t2pArrange, t2pMultiply;

    private NativeKernels(NativeLibrary lib, NativeIsa isa) {
        this.isa = isa;
        this.origin = lib.origin();
        this.t2pArrange = lib.downcall("jq_t2p_arrange", FunctionDescriptor.ofVoid(ADDRESS, ADDRESS, ADDRESS, JAVA_INT, ADDRESS));
        this.t2pMultiply = lib.downcall("jq_t2p_multiply_" + isa.suffix, FunctionDescriptor.ofVoid(ADDRESS, JAVA_INT, JAVA_INT, JAVA_INT,
                ADDRESS, ADDRESS, JAVA_LONG, ADDRESS, JAVA_LONG));
    }

    /** Every instruction set of the loaded library this CPU runs, best first (empty without a library). */
    public static List<NativeKernels> supported() {
        List<NativeKernels> all = new ArrayList<>();
        NativeLibrary.get().library().ifPresent(lib -> {
            for (NativeIsa isa : NativeIsa.values()) if ((lib.isas() & isa.bit) != 0) all.add(new NativeKernels(lib, isa));
        });
        return all;
    }

    /** The best instruction set this CPU runs, if the library is there. */
    public static Optional<NativeKernels> best() {
        return Best.KERNELS;
    }

    /** Why {@link #best()} is empty, or where the library came from. */
    public static String status() {
        NativeLibrary.Loaded l = NativeLibrary.get();
        if (l.library().isEmpty()) return l.reason();
        return best().map(k -> k.isa.suffix + " kernels, " + l.reason())
                .orElse("no kernels for this CPU in " + l.library().get().origin() + " (it lacks AVX2, AVX-512 VNNI or NEON dot products)");
    }

    private static final class Best {
        static final Optional<NativeKernels> KERNELS = supported().stream().findFirst();
    }

    public NativeIsa isa() { return isa; }

    @Override
    public String toString() { return "native " + isa.suffix + " (" + origin + ")"; }

    /** Bytes per block of a column arranged for the T2P kernels. */
    public static final int T2P_COLUMN = 288;

    /**
     * {@code jq_t2p_arrange}: a column's int8 activations (blocks × 128) with each block's sum of q
     * (int) and scale (float), arranged for the T2P dot products ({@link #T2P_COLUMN} bytes per block).
     */
    public void t2pArrange(MemorySegment q, MemorySegment sums, MemorySegment scales, int blocks, MemorySegment column) {
        try {
            t2pArrange.invokeExact(q, sums, scales, blocks, column);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /**
     * {@code jq_t2p_multiply}: row groups {@code [0, groups)} of the T2P blocks at {@code w} against
     * {@code columns} arranged columns ({@link #t2pArrange}, one after another), into
     * {@code y[c · ystride + row]} (the shared float formula), or, with {@code y}
     * {@link MemorySegment#NULL}, the exact dots {@code dots[c · dstride + row · blocks + b]}.
     */
    public void t2pMultiply(MemorySegment w, int groups, int blocks, int columns, MemorySegment act,
                            MemorySegment y, long ystride, MemorySegment dots, long dstride) {
        try {
            t2pMultiply.invokeExact(w, groups, blocks, columns, act, y, ystride, dots, dstride);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    private static RuntimeException rethrow(Throwable t) {
        if (t instanceof RuntimeException r) return r;
        if (t instanceof Error e) throw e;
        return new IllegalStateException(t);
    }
}
