/**
 * The reference runtime: runs a Llama-family checkpoint exactly (float32 activations) and judges
 * what jquant writes, by greedy tokens, perplexity and divergence from the float model.
 *
 * <pre>{@code
 * try (Checkpoint c = Checkpoints.open(path)) {
 *     LlamaModel model = LlamaModel.load(c);                     // weights used where they lie, Vector API kernels
 *     Tokenizer tokenizer = Tokenizer.of(c.vocabulary().orElseThrow());
 *     int[] ids = Generation.generate(model, tokenizer.encode("Once upon a time"), 100,
 *             Sampler.greedy(), tokenizer.eos(), id -> {});
 *     String text = tokenizer.decode(ids);
 *     Perplexity.Result r = new Perplexity(256).evaluate(model, tokenizer, corpus,
 *             (done, total, ppl) -> bar.update(done, total));
 * }
 * }</pre>
 *
 * Quantized weights plug in through {@link jquant.runtime.LinearWeightsFactory}: each linear layer is
 * a {@link jquant.runtime.LinearWeights}, {@link jquant.runtime.DenseF32Weights} for float weights.
 * Kernels live in {@link jquant.runtime.kernels}; the benchmark is the bench module's
 * {@code jquant.bench.RuntimeBench}.
 */
package jquant.runtime;
