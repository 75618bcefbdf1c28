package jquant.runtime;

import jquant.formats.ModelConfig;
import jquant.runtime.kernels.Kernels;
import jquant.core.WorkerPool;

import java.util.function.IntConsumer;

/**
 * One text's state while a {@link LlamaModel} reads it: the KV cache and scratch buffers. Not
 * thread-safe; open one session per concurrent text.
 *
 * <p>{@link #forward} runs a batch of tokens through every matrix at once (prefill, evaluation);
 * {@link #decode} is the one-token step of generation. Both compute each output of a batch in the
 * same order as it would be computed alone, so they agree to rounding.
 *
 * <p>The cache keeps keys and values transposed, {@code [layer][kvHead·headDim + d][position]}, so
 * that attention scores and the weighted sum of values run along positions, which vectorizes for any
 * head size (stories260K's heads have only 8 elements). A layer's cache is allocated when the layer
 * first runs.
 *
 * <p>Layer-sequential runs (calibration one decoder layer at a time, llm-compressor's sequential
 * onloading) use {@link #embed}, {@link #forwardBlock} and {@link #logits} on hidden states the caller
 * keeps: every product then sees exactly the rows, in the same batches, that {@link #forward} would
 * give it, so the results are the same bits.
 */
public final class InferenceSession {
    /** Tokens pushed through the matrices together; bounds the scratch memory. */
    private static final int MAX_BATCH = 256;
    /** Query heads attended together: they share a kv head, so each key and value load serves all of them. */
    private static final int HEAD_BLOCK = 4;
    /**
     * Elements of a row given to one work item of SwiGLU's gating: a decode step's single row is cut
     * too, so its {@code exp}s (a sixteenth of a two-thread step when one thread ran them) are shared.
     */
    private static final int GATE_SLICE = 1024;

    private final LlamaModel model;
    private final ModelConfig c;
    private final Kernels kernels;
    private final WorkerPool pool;
    private final int capacity;
    private final float[][] keys;
    private final float[][] values;
    /** Positions {@code [0, length)} of the cache hold valid keys and values. */
    private int length;

    private final int batch;
    private final float[] x;
    private final float[] xb;
    private final float[] q;
    private final float[] k;
    private final float[] v;
    private final float[] att;
    private final float[] gate;
    private final float[] up;
    private final float[] logitsScratch;
    private final float[][] scores;

    InferenceSession(LlamaModel model, int capacity) {
        this.model = model;
        this.c = model.config();
        if (capacity < 1 || capacity > c.maxSeqLen()) {
            throw new IllegalArgumentException("context length " + capacity + " outside [1, " + c.maxSeqLen()
                    + "] (the model's maximum)");
        }
        this.kernels = model.compute().kernels();
        this.pool = model.compute().pool();
        this.capacity = capacity;
        this.keys = new float[c.layers()][];
        this.values = new float[c.layers()][];
        this.batch = Math.min(MAX_BATCH, capacity);
        this.x = new float[batch * c.dim()];
        this.xb = new float[batch * c.dim()];
        this.q = new float[batch * c.qDim()];
        this.k = new float[batch * c.kvDim()];
        this.v = new float[batch * c.kvDim()];
        this.att = new float[batch * c.qDim()];
        this.gate = new float[batch * c.hiddenDim()];
        this.up = new float[batch * c.hiddenDim()];
        this.logitsScratch = new float[batch * c.vocabSize()];
        this.scores = new float[pool.threads()][HEAD_BLOCK * capacity];
    }

    /** Positions this session can hold. */
    public int capacity() {
        return capacity;
    }

    /** Positions {@code [0, length)} currently hold valid cache entries. */
    public int length() {
        return length;
    }

    /** Logits for every position: {@code forward(tokens, startPos, 0)}. */
    public float[] forward(int[] tokens, int startPos) {
        return forward(tokens, startPos, 0);
    }

    /**
     * Feeds {@code tokens} at positions {@code startPos, startPos+1, …} (overwriting the cache from
     * {@code startPos}; earlier positions must already be filled) and returns the logits predicting
     * the token after each of {@code tokens[firstLogit..]}, row-major {@code [n - firstLogit][vocab]}.
     * Skipping early rows saves the classifier where they are not needed (prefill, perplexity).
     */
    public float[] forward(int[] tokens, int startPos, int firstLogit) {
        int n = tokens.length;
        if (startPos < 0 || startPos > length) {
            throw new IllegalArgumentException("start position " + startPos + " leaves a gap: positions [0, " + length + ") are filled");
        }
        if (n == 0) throw new IllegalArgumentException("no tokens to feed");
        if (startPos + n > capacity) {
            throw new IllegalArgumentException(n + " tokens from position " + startPos + " exceed the context of " + capacity);
        }
        if (firstLogit < 0 || firstLogit > n) throw new IllegalArgumentException("first logit row " + firstLogit + " outside [0, " + n + "]");
        checkTokens(tokens);
        float[] logits = new float[(n - firstLogit) * c.vocabSize()];
        for (int b0 = 0; b0 < n; b0 += batch) {
            int m = Math.min(batch, n - b0);
            runBlocks(tokens, b0, m, startPos + b0);
            length = startPos + b0 + m;
            int from = Math.max(firstLogit - b0, 0);
            if (from < m) classify(from, m, (b0 + from - firstLogit) * c.vocabSize(), logits);
        }
        return logits;
    }

    private void checkTokens(int[] tokens) {
        for (int i = 0; i < tokens.length; i++) {
            if (tokens[i] < 0 || tokens[i] >= c.vocabSize()) {
                throw new IllegalArgumentException("token " + tokens[i] + " at index " + i + " outside the vocabulary [0, " + c.vocabSize() + ")");
            }
        }
    }

    /** Feeds one token at {@code pos} and returns its {@code vocab} logits. */
    public float[] decode(int token, int pos) {
        return forward(new int[] {token}, pos, 0);
    }

    /** Embedding and every transformer block for tokens {@code [b0, b0+m)} at positions from {@code pos0}. */
    private void runBlocks(int[] tokens, int b0, int m, int pos0) {
        int dim = c.dim();
        LlamaModel.LayerGate loaded = model.gate();
        loaded.await(0);
        TokenEmbedding embedding = model.embedding();
        for (int i = 0; i < m; i++) embedding.lookup(tokens[b0 + i], x, i * dim);
        for (int l = 0; l < c.layers(); l++) {
            loaded.await(l + 1);
            runBlock(l, m, pos0);
        }
    }

    /**
     * Writes the embedding rows of {@code tokens} to {@code hidden} ({@code tokens.length × dim}): the
     * input of the first block in a layer-sequential run.
     */
    public void embed(int[] tokens, float[] hidden) {
        checkTokens(tokens);
        if (hidden.length < tokens.length * c.dim()) throw new IllegalArgumentException(hidden.length + " floats cannot hold " + tokens.length + " hidden states");
        model.gate().await(0);
        for (int i = 0; i < tokens.length; i++) model.embedding().lookup(tokens[i], hidden, i * c.dim());
    }

    /**
     * Runs block {@code layer} alone over one window's hidden states {@code hidden} (rows of dim floats
     * for positions 0 … n−1), replacing them with the block's outputs. The window attends only to itself:
     * the layer's cache is refilled from position 0, as {@link #forward} of a fresh session fills it.
     */
    public void forwardBlock(int layer, float[] hidden, int n) {
        if (layer < 0 || layer >= c.layers()) throw new IllegalArgumentException("layer " + layer + " outside [0, " + c.layers() + ")");
        if (n < 1 || n > capacity) throw new IllegalArgumentException(n + " positions outside [1, " + capacity + "]");
        if (hidden.length < n * c.dim()) throw new IllegalArgumentException(hidden.length + " floats cannot hold " + n + " hidden states");
        int dim = c.dim();
        model.gate().await(layer + 1);
        for (int l = 0; l < c.layers(); l++) {
            // One layer's cache at a time: a layer-sequential run holds one layer, never the model.
            if (l != layer) keys[l] = values[l] = null;
        }
        for (int b0 = 0; b0 < n; b0 += batch) {
            int m = Math.min(batch, n - b0);
            System.arraycopy(hidden, b0 * dim, x, 0, m * dim);
            runBlock(layer, m, b0);
            System.arraycopy(x, 0, hidden, b0 * dim, m * dim);
        }
        length = 0;
    }

    /**
     * The final norm and classifier over rows {@code [0, n)} of {@code hidden} (the last block's outputs),
     * row-major {@code [n][vocab]}: the end of a layer-sequential run.
     */
    public float[] logits(float[] hidden, int n) {
        if (n < 1 || hidden.length < n * c.dim()) throw new IllegalArgumentException(hidden.length + " floats cannot hold " + n + " hidden states");
        float[] logits = new float[n * c.vocabSize()];
        for (int b0 = 0; b0 < n; b0 += batch) {
            int m = Math.min(batch, n - b0);
            System.arraycopy(hidden, b0 * c.dim(), x, 0, m * c.dim());
            classify(0, m, b0 * c.vocabSize(), logits);
        }
        return logits;
    }

    /** Transformer block {@code l} for the batch's {@code m} rows of {@code x}, at positions from {@code pos0}, in place. */
    private void runBlock(int l, int m, int pos0) {
        int dim = c.dim();
        int kvDim = c.kvDim();
        int hidden = c.hiddenDim();
        LlamaModel.Layer layer = model.layers().get(l);
        float[] attnNorm = layer.attnNorm();
        perToken(m, dim, i -> kernels.rmsnorm(x, i * dim, attnNorm, c.rmsEps(), xb, i * dim, dim));
        SharedInputProducts.matmul(pool, xb, m, new LinearWeights[] {layer.wq(), layer.wk(), layer.wv()}, new float[][] {q, k, v});
        addBias(layer.qBias(), q, m);
        addBias(layer.kBias(), k, m);
        addBias(layer.vBias(), v, m);
        if (keys[l] == null) {
            keys[l] = new float[kvDim * capacity];
            values[l] = new float[kvDim * capacity];
        }
        float[] kc = keys[l];
        float[] vc = values[l];
        if (m == 1) {
            attendOne(pos0, kc, vc);
        } else {
            perToken(m, c.qDim() + 3 * kvDim, i -> {
                int pos = pos0 + i;
                model.rotary().apply(q, i * c.qDim(), c.heads(), pos);
                model.rotary().apply(k, i * kvDim, c.kvHeads(), pos);
                for (int e = 0; e < kvDim; e++) {
                    kc[e * capacity + pos] = k[i * kvDim + e];
                    vc[e * capacity + pos] = v[i * kvDim + e];
                }
            });
            attend(m, pos0, kc, vc);
        }
        layer.wo().matmul(att, m, xb);
        float[] ffnNorm = layer.ffnNorm();
        perToken(m, 2 * dim, i -> {
            kernels.axpy(1f, xb, i * dim, x, i * dim, dim);
            kernels.rmsnorm(x, i * dim, ffnNorm, c.rmsEps(), xb, i * dim, dim);
        });
        if (m > 1 || !SharedInputProducts.gated(pool, kernels, xb, layer.gate(), layer.up(), gate, up)) {
            SharedInputProducts.matmul(pool, xb, m, new LinearWeights[] {layer.gate(), layer.up()}, new float[][] {gate, up});
            gateRows(m, hidden);
        }
        layer.down().matmul(gate, m, xb);
        perToken(m, dim, i -> kernels.axpy(1f, xb, i * dim, x, i * dim, dim));
    }

    /**
     * {@code step} for each token of the batch, tokens shared across the pool (each step reads and
     * writes only its token's rows, so the result is the same on any number of threads);
     * {@code work} is about the operations of one step.
     */
    private void perToken(int m, long work, IntConsumer step) {
        pool.forRange(m, work, (worker, start, end) -> {
            for (int i = start; i < end; i++) step.accept(i);
        });
    }

    /** {@code gate = silu(gate) · up} over the batch's {@code m} rows, in slices of {@value #GATE_SLICE} shared across the pool. */
    private void gateRows(int m, int hidden) {
        int slices = (hidden + GATE_SLICE - 1) / GATE_SLICE;
        pool.forRange(m * slices, 16L * GATE_SLICE, (worker, start, end) -> {
            for (int item = start; item < end; item++) {
                int from = item % slices * GATE_SLICE;
                kernels.siluMul(gate, up, item / slices * hidden + from, Math.min(GATE_SLICE, hidden - from));
            }
        });
    }

    /** Adds {@code bias} (Qwen2's q/k/v biases; null: none) to each of the {@code m} rows of {@code out}. */
    private void addBias(float[] bias, float[] out, int m) {
        if (bias == null) return;
        for (int i = 0; i < m; i++) kernels.axpy(1f, bias, 0, out, i * bias.length, bias.length);
    }

    /**
     * Causal grouped-query attention for tokens {@code [0, m)} of the batch: query head {@code h}
     * reads kv head {@code h / (heads / kvHeads)} over positions {@code [0, pos0 + i]}; scores are
     * scaled by {@code 1/sqrt(headDim)}. Work items are a token and up to {@value #HEAD_BLOCK} query
     * heads of one kv head, shared across the pool; {@link Kernels#scores} and
     * {@link Kernels#weightedSums} give each head the bits it would have alone.
     */
    private void attend(int m, int pos0, float[] kc, float[] vc) {
        int headDim = c.headDim();
        int group = c.heads() / c.kvHeads();
        int blocksPerGroup = (group + HEAD_BLOCK - 1) / HEAD_BLOCK, blocks = c.kvHeads() * blocksPerGroup;
        float scale = (float) (1.0 / Math.sqrt(headDim));
        long workPerItem = 2L * headDim * (pos0 + (m + 1) / 2) * Math.min(group, HEAD_BLOCK);
        pool.forRange(m * blocks, workPerItem, (worker, start, end) -> {
            for (int item = start; item < end; item++) {
                int i = item / blocks, kvHead = item % blocks / blocksPerGroup, first = item % blocksPerGroup * HEAD_BLOCK;
                attendHeads(scores[worker], kvHead * group + first, Math.min(HEAD_BLOCK, group - first), kvHead, i, pos0 + i + 1, scale, kc, vc);
            }
        });
    }

    /**
     * A decode step's attention at {@code pos}, one work item a kv head: its key rotated and written with its value into the
     * cache, its query heads rotated, then attended {@value #HEAD_BLOCK} at a time ({@link #attendHeads}). The thread that
     * attends a kv head writes its cache entries, so none of their lines comes from another core's cache, and the rotations
     * and writes are shared across the pool instead of running on one thread before the job. The same operations on the
     * same values as a batch's per-token step and {@link #attend}, so the same bits.
     */
    private void attendOne(int pos, float[] kc, float[] vc) {
        int headDim = c.headDim(), group = c.heads() / c.kvHeads();
        float scale = (float) (1.0 / Math.sqrt(headDim));
        long workPerItem = 2L * headDim * (pos + 1) * group;
        pool.forRange(c.kvHeads(), workPerItem, (worker, start, end) -> {
            for (int kvHead = start; kvHead < end; kvHead++) {
                int kvOff = kvHead * headDim;
                model.rotary().apply(k, kvOff, 1, pos);
                for (int e = kvOff; e < kvOff + headDim; e++) {
                    kc[e * capacity + pos] = k[e];
                    vc[e * capacity + pos] = v[e];
                }
                model.rotary().apply(q, kvHead * group * headDim, group, pos);
                for (int first = 0; first < group; first += HEAD_BLOCK) {
                    attendHeads(scores[worker], kvHead * group + first, Math.min(HEAD_BLOCK, group - first), kvHead, 0, pos + 1, scale, kc, vc);
                }
            }
        });
    }

    /**
     * Query heads {@code [h, h + rows)} of batch row {@code i}, all of kv head {@code kvHead}, over cache positions
     * {@code [0, positions)} into {@link #att}, with {@code s} as the scores' scratch.
     */
    private void attendHeads(float[] s, int h, int rows, int kvHead, int i, int positions, float scale, float[] kc, float[] vc) {
        int headDim = c.headDim();
        int qOff = i * c.qDim() + h * headDim;
        int kvBase = kvHead * headDim * capacity;
        kernels.scores(q, qOff, headDim, rows, headDim, scale, kc, kvBase, capacity, positions, s, 0, capacity);
        kernels.softmaxRows(s, 0, capacity, rows, positions);
        kernels.weightedSums(s, 0, capacity, rows, vc, kvBase, capacity, headDim, positions, att, qOff, headDim);
    }

    /** Final norm and classifier for batch rows {@code [from, m)}, written to {@code logits[offset..]}. */
    private void classify(int from, int m, int offset, float[] logits) {
        model.gate().await(c.layers() + 1);
        int dim = c.dim();
        int rows = m - from;
        for (int i = 0; i < rows; i++) kernels.rmsnorm(x, (from + i) * dim, model.finalNorm(), c.rmsEps(), xb, i * dim, dim);
        model.head().matmul(xb, rows, logitsScratch);
        System.arraycopy(logitsScratch, 0, logits, offset, rows * c.vocabSize());
    }
}
