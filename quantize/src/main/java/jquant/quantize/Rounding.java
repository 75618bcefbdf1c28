package jquant.quantize;

/** How a channel's weights are rounded onto its B-bit grid (the grid and its scale are chosen the same way by each). */
public enum Rounding {
    /** Each weight to its nearest level ({@link SymmetricChannelQuantizer}). */
    RTN,
    /**
     * Column by column, each rounding error spread over the columns not yet rounded so that the
     * layer's output on the calibration inputs moves least ({@link ErrorCompensatedRounding}, the
     * GPTQ paper by Frantar et al.), the columns taken in order of decreasing E[x_j²] (the paper's
     * "act-order"): the inputs that weigh most are rounded while the most columns are left to absorb
     * their errors.
     */
    GPTQ("gptq"),
    /** GPTQ with the columns in their own order (jquant's gptq before act-order; files of .jqw version 1 say "gptq" for it). */
    GPTQ_COLUMNS("gptq-columns");

    private final String label;

    Rounding() {
        this.label = name().toLowerCase(java.util.Locale.ROOT);
    }

    Rounding(String label) {
        this.label = label;
    }

    /** {@code rtn}, {@code gptq}, {@code gptq-columns}: the spelling files and the command line use. */
    public String label() {
        return label;
    }

    /** Whether the rounding compensates errors with the layer's E[x·xᵀ] (needs calibration's second moments). */
    public boolean compensated() {
        return this != RTN;
    }

    public static Rounding of(String label) {
        for (Rounding r : values()) if (r.label().equals(label)) return r;
        throw new IllegalArgumentException("rounding \"" + label + "\" is not one of rtn, gptq, gptq-columns");
    }
}
