package jquant.pack.model;

import jquant.formats.Checkpoint;
import jquant.formats.TensorKind;
import jquant.quantize.ErrorCompensatedRounding;
import jquant.quantize.Rounding;
import jquant.quantize.SmoothingRule;

import java.util.SequencedMap;

/**
 * A source checkpoint after NPU-aware smoothing (EdgeFlow §4.1, {@code docs/calibration.md} §2), as
 * the packer stores it. Implemented over {@code jquant.calibration.SmoothedModel}, which this module
 * cannot depend on (calibration sits above the runtime, which sits above pack).
 *
 * <pre>
 *   weights()        W' = diag(S_O'^-β) · diag(1/r) · W · diag(f)    packed to the plan's widths
 *   outputFactor()   S_O'^β per output channel                      multiplied into the channel's scale
 *   norms()          norm / f                                       stored in place of the original gain
 *   inputScale()     max |x / f| / 127                              static int8 input scale (attr)
 *   outputScale()    max |o / S_O'^β| / 127                         static int8 output scale (attr)
 *   hessian()        E[(x/f)·(x/f)ᵀ] and its GPTQ factor            for {@code --rounding gptq}
 * </pre>
 */
public interface SmoothedSource {

    /** The smoothed view: W' of every linear layer and folded norm gains, by {@link Checkpoint#tensor}. */
    Checkpoint smoothed();

    /** W' of a linear layer, row-major {@code [out][in]}: what {@link #smoothed()} holds, without a tensor around it. */
    float[] weights(TensorKind kind, int layer);

    /** S_O'^β of a linear layer, per output channel. */
    float[] outputFactor(TensorKind kind, int layer);

    /** The static per-tensor int8 scale of a linear layer's smoothed input. */
    float inputScale(TensorKind kind, int layer);

    /** The static per-tensor int8 scale of a linear layer's smoothed output {@code o / S_O'^β}. */
    float outputScale(TensorKind kind, int layer);

    /** α of the group a linear layer belongs to. */
    float alpha(TensorKind kind, int layer);

    /** α of every group ({@code blk.0.attn_qkv}, …, {@code output}), in forward order, for the metadata. */
    SequencedMap<String, Float> groupAlphas();

    /** The fingerprint of the model the stats were measured on (it is this source's). */
    String modelFingerprint();

    /** SHA-256 (hex) of the calibration stats file's bytes: which stats were applied. */
    String statsSha256();

    /** The rule that made the smoothing factors from the stats and α. */
    SmoothingRule rule();

    /**
     * What GPTQ rounds a linear layer's W' with: E[x'·x'ᵀ] of its smoothed input x' = x/f and the factor
     * of its damped inverse, in the column order {@code rounding} takes ({@link Rounding#GPTQ}: act-order,
     * {@link Rounding#GPTQ_COLUMNS}: the columns' own).
     *
     * @throws IllegalArgumentException if the stats hold no E[x·xᵀ]
     */
    ErrorCompensatedRounding.Hessian hessian(TensorKind kind, int layer, Rounding rounding);
}
