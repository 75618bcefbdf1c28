package jquant.quantize;

/** How a channel's weights are rounded onto its B-bit grid (the grid and its scale are chosen the same way by both). */
public enum Rounding {
    /** Each weight to its nearest level ({@link SymmetricChannelQuantizer}). */
    RTN,
    /**
     * Column by column, each rounding error spread over the columns not yet rounded so that the
     * layer's output on the calibration inputs moves least ({@link ErrorCompensatedRounding}, the
     * GPTQ paper by Frantar et al.).
     */
    GPTQ;

    /** {@code rtn}, {@code gptq}: the spelling files and the command line use. */
    public String label() {
        return name().toLowerCase(java.util.Locale.ROOT);
    }

    public static Rounding of(String label) {
        for (Rounding r : values()) if (r.label().equals(label)) return r;
        throw new IllegalArgumentException("rounding \"" + label + "\" is not one of rtn, gptq");
    }
}
