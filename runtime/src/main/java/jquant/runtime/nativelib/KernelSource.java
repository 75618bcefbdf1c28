package jquant.runtime.nativelib;

import java.util.Locale;
import java.util.Optional;

/**
 * Which implementation runs the kernels that have a native twin, chosen once per process (the CLI's
 * {@code --kernels java|native|auto}, or the system property {@code jquant.kernels}): {@code auto} the
 * C library's where it is built and this CPU runs one of its instruction sets, else Java;
 * {@code java} always Java (the reference); {@code native} the C library's, or an error naming why
 * there is none. A matrix takes the choice in force when it is built.
 */
public enum KernelSource {
    AUTO, JAVA, NATIVE;

    private static volatile KernelSource chosen = fromProperty();

    private static KernelSource fromProperty() {
        String p = System.getProperty("jquant.kernels", "auto");
        try {
            return valueOf(p.trim().toUpperCase(Locale.ROOT));
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("jquant.kernels is '" + p + "'; it must be auto, java or native");
        }
    }

    /** Chooses the implementation for matrices built from now on; {@code NATIVE} without usable native kernels is refused, saying why. */
    public static void use(KernelSource source) {
        if (source == NATIVE && NativeKernels.best().isEmpty()) {
            throw new IllegalStateException("native kernels unavailable: " + NativeKernels.status());
        }
        chosen = source;
    }

    /** The implementation in force. */
    public static KernelSource chosen() { return chosen; }

    /** The native kernels matrices are built on now, or empty for the Java ones. */
    public static Optional<NativeKernels> kernels() {
        return chosen == JAVA ? Optional.empty() : NativeKernels.best();
    }

    /**
     * The native kernels whose float chains have {@code lanes} lanes (AVX-512 16, AVX2 8, NEON 4), for the
     * float kernels that must sum in the Java kernels' order; empty if the choice is Java or no
     * instruction set this CPU runs has that width.
     */
    public static Optional<NativeKernels> kernelsWithFloatLanes(int lanes) {
        if (chosen == JAVA) return Optional.empty();
        return NativeKernels.supported().stream().filter(k -> k.isa().bits / Float.SIZE == lanes).findFirst();
    }

    /** For {@code --verbose}: which kernels run, and why. */
    public static String describe() {
        if (chosen == JAVA) return "Java kernels (--kernels java)";
        return kernels().map(k -> "native " + k.isa().name().toLowerCase(Locale.ROOT) + " kernels where they exist, Java elsewhere ("
                + NativeKernels.status() + ")").orElse("Java kernels (" + NativeKernels.status() + ")");
    }
}
