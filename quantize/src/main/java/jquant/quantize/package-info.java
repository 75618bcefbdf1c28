/**
 * Per-output-channel mixed-precision quantization (EdgeFlow §4.1): what each channel costs at
 * 1..8 bits, and which width each channel gets under an average bit budget.
 *
 * <pre>
 *  float[] rows×cols ──► {@link jquant.quantize.RelativeError#table} ──► {@link jquant.quantize.ErrorTable}
 *                              (APPROX: closed form; EXACT: cosine distance on the real grid)
 *  ErrorTable… + budget ──► {@link jquant.quantize.GreedyBitAllocator#allocate} ──► {@link jquant.quantize.BitPlan}
 *  BitPlan ◄──► plan.json    {@link jquant.quantize.BitPlanJson#write} / {@link jquant.quantize.BitPlanJson#read}
 *  row + width ──► {@link jquant.quantize.SymmetricChannelQuantizer#quantizeRow} ──► int8 values + scale
 *                  (B-bit field ↔ int8: the weightlet format's {@link jquant.formats.weightlet.WeightletLayout#toInt8} / {@code toField})
 * </pre>
 */
package jquant.quantize;
