package jquant.runtime;

import jquant.runtime.kernels.MatmulKernels;
import jquant.runtime.kernels.NonFiniteWeightException;

/**
 * A weight matrix multiplied where it is stored, row by row: the product every stored form shares
 * (dense float of any width, weightlet codes, decoded blocks), with the rows' storage left to
 * subclasses. Nothing is copied at load; at run time a row exists in float or int8 only in a small
 * per-thread buffer.
 *
 * <ul>
 * <li><em>Decode</em> (fewer than {@value #PREFILL_TOKENS} tokens): the rows are read in groups of four
 * by a fused kernel ({@link #dotRows}) that converts in registers — the memory-bound path, one pass over
 * the stored bytes per token.
 * <li><em>Prefill</em>: a block of rows is decoded to float32 once ({@link #decodeRows}), in chunks of
 * {@value #K_CHUNK} columns, and every token of the batch passes over it through the 4 × 4
 * {@link MatmulKernels#tile}: the stored bytes are read once per batch, the arithmetic is the limit.
 * </ul>
 * Both compute every output with {@link MatmulKernels}' one summation order, so a token's outputs are
 * the same alone and in a batch, bit for bit. An exact-integer subclass ({@link #exactIntegers}) has
 * its partial sums moved out of the float lanes every {@value #K_CHUNK} columns, before a lane could
 * pass 2^24 (int8 × int8 products are below 2^14, so a lane holds {@value #K_CHUNK} of them exactly).
 */
abstract class RowMajorWeights implements LinearWeights {

    /** Batches of at least this many tokens take the prefill path. */
    static final int PREFILL_TOKENS = 4;
    /** Columns per chunk: a 4-token activation chunk (16 KiB) stays in L1, an int8 lane stays exact. */
    static final int K_CHUNK = 1024;
    /** Float32 bytes of decoded rows per prefill block: held in L2 while every token passes. */
    private static final int BLOCK_BYTES = 128 << 10;

    protected final String name;
    protected final int out;
    protected final int in;
    protected final Compute compute;
    private final int blockRows;

    protected RowMajorWeights(String name, int out, int in, Compute compute) {
        if (out <= 0 || in <= 0) throw new IllegalArgumentException(name + ": shape " + out + "×" + in + " must be positive");
        this.name = name;
        this.out = out;
        this.in = in;
        this.compute = compute;
        this.blockRows = Math.max(4, Math.min((out + 3) / 4 * 4, BLOCK_BYTES / (4 * Math.min(in, K_CHUNK)) / 4 * 4));
    }

    @Override
    public final int inFeatures() {
        return in;
    }

    @Override
    public final int outFeatures() {
        return out;
    }

    /** Per-thread buffers, grown to the largest matrix seen, reused by every call. */
    static final class Scratch {
        float[] acc = new float[0];
        float[] rows = new float[0];
        byte[] codes = new byte[0];
        float[] input = new float[0];
        long[] totals = new long[0];

        float[] acc(int n) { return acc.length >= n ? acc : (acc = new float[n]); }
        float[] rows(int n) { return rows.length >= n ? rows : (rows = new float[n]); }
        byte[] codes(int n) { return codes.length >= n ? codes : (codes = new byte[n]); }
        long[] totals(int n) { return totals.length >= n ? totals : (totals = new long[n]); }
        float[] input(int n) { return input.length >= n ? input : (input = new float[n]); }
    }

    private static final ThreadLocal<Scratch> SCRATCH = ThreadLocal.withInitial(Scratch::new);

    static Scratch scratch() {
        return SCRATCH.get();
    }

    /**
     * Continues the chains of rows {@code r0..r3} (repeats allowed) over columns {@code [k0, k1)} with
     * the activations at {@code x[xOff..]}: one of {@link MatmulKernels}' row kernels.
     */
    abstract void dotRows(MatmulKernels k, int r0, int r1, int r2, int r3, float[] x, int xOff, int k0, int k1,
                          float[] acc, Scratch s);

    /** Rows {@code [r0, r0 + count)}, columns {@code [k0, k1)}, as float32 into {@code dst} at row stride {@code k1 − k0}. */
    abstract void decodeRows(int r0, int count, int k0, int k1, float[] dst, Scratch s);

    /** Row {@code r}'s output from its product with the (prepared) activations. */
    abstract float output(int r, float dot);

    /** Row {@code r}'s output from an exact integer product ({@link #exactIntegers} only). */
    float output(int r, long dot) {
        throw new IllegalStateException(name + " has no integer products");
    }

    /** True if products are exact integers (int8 × int8) whose partial sums must leave the float lanes in time. */
    boolean exactIntegers() {
        return false;
    }

    /** The activations as the kernels multiply them: {@code x} itself, or its int8 codes as floats. */
    float[] prepare(float[] x, int n, Scratch s) {
        return x;
    }

    /**
     * The activations as the decode kernels ({@link #dotRows}) take them, from the prepared ones, or
     * null if this input must take the prefill path instead (which gives the same bits).
     */
    float[] decodeInput(float[] x, int n, Scratch s) {
        return x;
    }

    @Override
    public final void matmul(float[] x, int n, float[] y) {
        Scratch s = scratch();
        try {
            float[] xs = prepare(x, n, s);
            float[] xd = n < PREFILL_TOKENS ? decodeInput(xs, n, s) : null;
            if (xd != null) decode(xd, n, y);
            else prefill(xs, n, y);
        } catch (NonFiniteWeightException e) {
            throw new IllegalStateException(name + ": a stored weight is not finite (" + e.getMessage() + ")", e);
        }
    }

    /**
     * Columns per {@link #dotRows} call in decode (a multiple of the lanes, so the chains carry over):
     * the whole row unless a storage form gains from shorter calls.
     */
    int decodeChunk() {
        return in;
    }

    /**
     * Whether decode multiplies four rows from the four quarters of a worker's range at once, rather
     * than four adjacent rows: four long sequential streams, which the hardware prefetcher follows,
     * where four adjacent rows of a few KiB each are four short streams that end at a page boundary.
     * Only where memory is the limit: weightlet rows, whose unpacking is, decoded slower spread.
     */
    boolean spreadRows() {
        return false;
    }

    private void decode(float[] x, int n, float[] y) {
        MatmulKernels k = compute.matmul();
        int chunk = decodeChunk();
        int lanes = k.lanes();
        boolean exact = exactIntegers();
        compute.pool().forRange((out + 3) / 4, 4L * in * n, (worker, g0, g1) -> {
            Scratch s = scratch();
            float[] acc = s.acc(4 * lanes);
            long[] totals = s.totals(4);
            int first = 4 * g0, end = Math.min(out, 4 * g1), quarter = (end - first + 3) / 4;
            boolean spread = spreadRows();
            int[] rows = new int[4];
            for (int q = 0; q < quarter; q++) {
                for (int j = 0; j < 4; j++) rows[j] = spread ? first + j * quarter + q : first + 4 * q + j;
                int live = 4;
                while (rows[live - 1] >= end) rows[--live] = rows[0];   // a repeated row's output is not kept
                int r0 = rows[0], r1 = rows[1], r2 = rows[2], r3 = rows[3];
                for (int i = 0; i < n; i++) {
                    java.util.Arrays.fill(acc, 0, 4 * lanes, 0f);
                    if (!exact) {
                        for (int k0 = 0; k0 < in; k0 += chunk) dotRows(k, r0, r1, r2, r3, x, i * in, k0, Math.min(in, k0 + chunk), acc, s);
                        for (int j = 0; j < live; j++) y[i * out + rows[j]] = output(rows[j], MatmulKernels.laneSum(acc, j * lanes, lanes));
                        continue;
                    }
                    java.util.Arrays.fill(totals, 0, 4, 0L);
                    for (int k0 = 0; k0 < in; k0 += K_CHUNK) {
                        dotRows(k, r0, r1, r2, r3, x, i * in, k0, Math.min(in, k0 + K_CHUNK), acc, s);
                        drain(acc, 0, lanes, 4, totals, 0);
                    }
                    for (int j = 0; j < live; j++) y[i * out + rows[j]] = output(rows[j], totals[j]);
                }
            }
        });
    }

    /**
     * Adds the exact integer lanes of the {@code count} products at {@code acc[at..]} to
     * {@code totals[to..]} and clears them.
     */
    private static void drain(float[] acc, int at, int lanes, int count, long[] totals, int to) {
        for (int p = 0; p < count; p++) {
            long sum = 0;
            for (int c = 0; c < lanes; c++) sum += (long) acc[at + p * lanes + c];
            totals[to + p] += sum;
        }
        java.util.Arrays.fill(acc, at, at + count * lanes, 0f);
    }

    /**
     * Blocks of {@code blockRows} rows, split across the pool; per block and per chunk of columns the
     * rows are decoded once, then each tile of 4 tokens × 4 rows continues its chains over the chunk.
     * A last partial tile repeats its last row or token; only real outputs are written.
     */
    private void prefill(float[] x, int n, float[] y) {
        MatmulKernels k = compute.matmul();
        int lanes = k.lanes();
        boolean exact = exactIntegers();
        int tokenTiles = (n + 3) / 4, blocks = (out + blockRows - 1) / blockRows;
        compute.pool().forRange(blocks, (long) blockRows * in * n, (worker, b0, b1) -> {
            Scratch s = scratch();
            for (int b = b0; b < b1; b++) {
                int first = b * blockRows, rows = Math.min(blockRows, out - first), rowTiles = (rows + 3) / 4;
                float[] acc = s.acc(rowTiles * tokenTiles * 16 * lanes);
                long[] totals = s.totals(exact ? rowTiles * tokenTiles * 16 : 0);
                java.util.Arrays.fill(acc, 0, rowTiles * tokenTiles * 16 * lanes, 0f);
                if (exact) java.util.Arrays.fill(totals, 0, rowTiles * tokenTiles * 16, 0L);
                for (int k0 = 0; k0 < in; k0 += K_CHUNK) {
                    int k1 = Math.min(in, k0 + K_CHUNK), width = k1 - k0;
                    float[] w = s.rows(rows * width);
                    decodeRows(first, rows, k0, k1, w, s);
                    for (int t = 0; t < tokenTiles; t++) {
                        int t0 = 4 * t, t1 = Math.min(t0 + 1, n - 1), t2 = Math.min(t0 + 2, n - 1), t3 = Math.min(t0 + 3, n - 1);
                        for (int rt = 0; rt < rowTiles; rt++) {
                            int j0 = 4 * rt, j1 = Math.min(j0 + 1, rows - 1), j2 = Math.min(j0 + 2, rows - 1), j3 = Math.min(j0 + 3, rows - 1);
                            int tileAcc = (t * rowTiles + rt) * 16 * lanes;
                            k.tile(w, j0 * width - k0, j1 * width - k0, j2 * width - k0, j3 * width - k0,
                                    x, t0 * in, t1 * in, t2 * in, t3 * in, k0, k1, acc, tileAcc);
                            if (exact) drain(acc, tileAcc, lanes, 16, totals, (t * rowTiles + rt) * 16);
                        }
                    }
                }
                for (int t = 0; t < tokenTiles; t++) {
                    for (int rt = 0; rt < rowTiles; rt++) {
                        int base = (t * rowTiles + rt) * 16;
                        for (int ti = 0; ti < 4 && 4 * t + ti < n; ti++) {
                            for (int j = 0; j < 4 && 4 * rt + j < rows; j++) {
                                int r = first + 4 * rt + j, p = base + 4 * ti + j;
                                y[(4 * t + ti) * out + r] = exact ? output(r, totals[p]) : output(r, MatmulKernels.laneSum(acc, p * lanes, lanes));
                            }
                        }
                    }
                }
            }
        });
    }
}
