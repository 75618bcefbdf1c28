package jquant.calibration;

import jquant.formats.Checkpoint;
import jquant.formats.ModelConfig;
import jquant.formats.Tensor;
import jquant.formats.TensorKind;

import java.nio.ByteBuffer;
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

    /** 64 hex digits. */
    public static String of(Checkpoint checkpoint) {
        MessageDigest sha;
        try {
            sha = MessageDigest.getInstance("SHA-256");
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("the JDK lacks SHA-256", e);
        }
        ModelConfig c = checkpoint.config();
        sha.update((c.toString() + "|" + checkpoint.rope()).getBytes(StandardCharsets.UTF_8));
        for (TensorKind kind : TensorKind.values()) {
            for (int layer = 0; layer < (kind.perLayer() ? c.layers() : 1); layer++) {
                Tensor t = checkpoint.tensor(kind, layer);
                sha.update((kind.canonicalName(layer) + t.shapeString()).getBytes(StandardCharsets.UTF_8));
                update(sha, t.row(0));
                update(sha, t.row(t.rows() - 1));
            }
        }
        return HexFormat.of().formatHex(sha.digest());
    }

    private static void update(MessageDigest sha, float[] values) {
        ByteBuffer b = ByteBuffer.allocate(values.length * Float.BYTES).order(ByteOrder.LITTLE_ENDIAN);
        b.asFloatBuffer().put(values);
        sha.update(b.array());
    }
}
