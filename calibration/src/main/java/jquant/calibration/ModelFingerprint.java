package jquant.calibration;

import jquant.formats.Checkpoint;
import jquant.formats.ModelConfig;
import jquant.formats.Tensor;
import jquant.formats.TensorKind;

import jquant.quantize.BitPlan;

import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;

/**
 * Which model a calibration belongs to: SHA-256 over the config, the RoPE convention and, for every
 * canonical tensor in order, its shape and the float32 values of its first and last row. Reading
 * two rows per tensor keeps it cheap on a 7B checkpoint while telling apart two models of the same
 * shape (a fine-tune, another seed). The same weights read from another container (llama2.c and
 * GGUF F32) give the same fingerprint; re-quantized weights (Q8_0) or permuted q/k rows (HF
 * rotate-half) do not, and their activations differ too.
 */
public final class ModelFingerprint {

    private ModelFingerprint() {}

    /** The plan's record of this model: its fingerprint and its file or folder name. */
    public static BitPlan.ModelId id(Checkpoint checkpoint) {
        return new BitPlan.ModelId(of(checkpoint), String.valueOf(checkpoint.source().getFileName()));
    }

    /**
     * Refuses a plan allocated for another model, naming both (a plan that records no model passes: it
     * was written before plans recorded it).
     *
     * @param planFile where the plan was read from, for the message
     */
    public static void requireSameModel(BitPlan plan, Path planFile, Checkpoint checkpoint) {
        if (plan.model() == null) return;
        BitPlan.ModelId here = id(checkpoint);
        if (!plan.model().fingerprint().equals(here.fingerprint())) {
            throw new IllegalArgumentException(planFile + " was allocated for " + plan.model().name() + " (model fingerprint "
                    + plan.model().fingerprint().substring(0, 12) + "…), not for " + here.name() + " (fingerprint "
                    + here.fingerprint().substring(0, 12) + "…): allocate a plan for this model with jquant allocate");
        }
    }

    /** 64 hex digits. */
    public static String of(Checkpoint checkpoint) {
        MessageDigest sha;
        try {
            sha = MessageDigest.getInstance("SHA-256");
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("the JDK lacks SHA-256", e);
        }
        ModelConfig c = checkpoint.config();
        sha.update((describe(c) + "|" + checkpoint.rope()).getBytes(StandardCharsets.UTF_8));
        for (TensorKind kind : TensorKind.values()) {
            if (!kind.presentIn(c)) continue;
            for (int layer = 0; layer < (kind.perLayer() ? c.layers() : 1); layer++) {
                Tensor t = checkpoint.tensor(kind, layer);
                sha.update((kind.canonicalName(layer) + t.shapeString()).getBytes(StandardCharsets.UTF_8));
                update(sha, t.row(0));
                update(sha, t.row(t.rows() - 1));
            }
        }
        return HexFormat.of().formatHex(sha.digest());
    }

    /**
     * The config as text: for a plain Llama the form every earlier fingerprint hashed (so stats files made
     * before head dims, RoPE scaling and architectures existed still match), else the whole record.
     */
    private static String describe(ModelConfig c) {
        if (!c.isPlainLlama()) return c.toString();
        return "ModelConfig[dim=" + c.dim() + ", hiddenDim=" + c.hiddenDim() + ", layers=" + c.layers() + ", heads=" + c.heads()
                + ", kvHeads=" + c.kvHeads() + ", vocabSize=" + c.vocabSize() + ", maxSeqLen=" + c.maxSeqLen() + ", ropeTheta="
                + c.ropeTheta() + ", rmsEps=" + c.rmsEps() + ", tiedEmbeddings=" + c.tiedEmbeddings() + "]";
    }

    private static void update(MessageDigest sha, float[] values) {
        ByteBuffer b = ByteBuffer.allocate(values.length * Float.BYTES).order(ByteOrder.LITTLE_ENDIAN);
        b.asFloatBuffer().put(values);
        sha.update(b.array());
    }
}
