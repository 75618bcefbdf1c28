package jquant.bench;

import jquant.bench.baseline.PaddedInt4Int8Packer;
import jquant.bench.baseline.SplitPlanePacker;
import jquant.bench.baseline.VectorPaddedUnpacker;
import jquant.bench.baseline.VectorSplitPlaneUnpacker;
import jquant.formats.weightlet.ChannelPacker;
import jquant.formats.weightlet.ChannelUnpacker;
import jquant.formats.weightlet.PackedTensor;
import jquant.formats.weightlet.ScalarWeightletUnpacker;
import jquant.formats.weightlet.VectorWeightletUnpacker;
import jquant.formats.weightlet.WeightletLayout;
import jquant.formats.weightlet.WeightletPacker;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;

import java.util.Random;

/**
 * JMH: one thread unpacking a channels × length tensor to int8, the weightlet kernels against the
 * EdgeFlow paper's Figure-13 baselines and against {@code memcpy}, the baseline every figure is read
 * against ({@code copy}, same bytes out). Plans as {@link UnpackBench}: uniform B or the mixed plan.
 */
@State(org.openjdk.jmh.annotations.Scope.Benchmark)
public class UnpackBenchmark extends JmhDefaults {

    @Param({"weightlet", "weightlet-scalar", "split-planes", "padded-int4-int8"})
    public String format;

    @Param({"2", "3", "4", "5", "8", "mixed"})
    public String plan;

    @Param({"1024"})
    public int channels;

    @Param({"4096"})
    public int length;

    private PackedTensor tensor;
    private ChannelUnpacker unpacker;
    private byte[] out;
    private byte[] source;

    @Setup
    public void pack() {
        ChannelPacker packer = switch (format) {
            case "split-planes" -> SplitPlanePacker.INSTANCE;
            case "padded-int4-int8" -> PaddedInt4Int8Packer.INSTANCE;
            default -> WeightletPacker.INSTANCE;
        };
        unpacker = switch (format) {
            case "weightlet" -> VectorWeightletUnpacker.INSTANCE;
            case "weightlet-scalar" -> ScalarWeightletUnpacker.INSTANCE;
            case "split-planes" -> VectorSplitPlaneUnpacker.INSTANCE;
            case "padded-int4-int8" -> VectorPaddedUnpacker.INSTANCE;
            default -> throw new IllegalArgumentException("unknown format " + format);
        };
        Random random = new Random(2026);
        int[] bits = plan.equals("mixed") ? UnpackBench.mixedPlan(channels, random) : UnpackBench.uniform(channels, Integer.parseInt(plan));
        byte[] fields = new byte[channels * length];
        for (int c = 0; c < channels; c++) {
            int limit = WeightletLayout.maxField(bits[c]) + 1;
            for (int i = 0; i < length; i++) fields[c * length + i] = (byte) random.nextInt(limit);
        }
        tensor = PackedTensor.pack(packer, fields, channels, length, bits);
        out = new byte[channels * length];
        source = new byte[channels * length];
    }

    @Benchmark
    public byte[] unpack() {
        unpacker.unpackChannels(tensor, 0, channels, out);
        return out;
    }

    @Benchmark
    public byte[] copy() {
        System.arraycopy(source, 0, out, 0, out.length);
        return out;
    }
}
