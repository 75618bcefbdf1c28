package jquant.runtime;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import jquant.formats.Checkpoint;
import jquant.formats.jqw.JqwFile;
import jquant.formats.jqw.JqwLayer;
import jquant.pack.model.ModelPacker;
import jquant.pack.model.TestModels;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Layer-pipelined loading: stages complete in order, the forward pass waits only for the stage it
 * needs, a failed stage (a corrupted layer) stops the model from using it, and the pipelined and
 * eager policies give the same logits.
 */
class LayerLoaderTest {

    @Test
    void aStageIsAwaitedOnlyUntilItIsLoaded() throws Exception {
        CountDownLatch release = new CountDownLatch(1);
        List<Integer> order = Collections.synchronizedList(new ArrayList<>());
        List<LayerLoader.Stage> stages = List.of(() -> order.add(0), () -> {
            release.await();
            order.add(1);
        }, () -> order.add(2));
        try (LayerLoader loader = LayerLoader.start(stages, LayerLoader.Policy.PIPELINED)) {
            loader.await(0);
            assertThat(order).containsExactly(0);
            Thread waiter = Thread.ofPlatform().start(() -> loader.await(2));
            waiter.join(200);
            assertThat(waiter.isAlive()).as("stage 2 waits for stage 1").isTrue();
            release.countDown();
            waiter.join();
            assertThat(order).containsExactly(0, 1, 2);
        }
    }

    /** Layerwise: nothing is loaded ahead; waiting for a stage loads it, and any before it, on the waiting thread. */
    @Test
    void layerwiseLoadsAStageOnlyWhenItIsAwaited() {
        List<Integer> order = new ArrayList<>();
        List<LayerLoader.Stage> stages = List.of(() -> order.add(0), () -> order.add(1), () -> order.add(2), () -> order.add(3));
        try (LayerLoader loader = LayerLoader.start(stages, LayerLoader.Policy.LAYERWISE)) {
            assertThat(order).isEmpty();
            loader.await(1);
            assertThat(order).containsExactly(0, 1);
            loader.await(0);
            loader.await(1);
            assertThat(order).containsExactly(0, 1);
            loader.await(3);
            assertThat(order).containsExactly(0, 1, 2, 3);
        }
    }

    @Test
    void aFailedStageFailsEveryWaitFromItOn() {
        List<LayerLoader.Stage> stages = List.of(() -> {}, () -> { throw new IOException("layer 1 is unreadable"); }, () -> {});
        try (LayerLoader loader = LayerLoader.start(stages, LayerLoader.Policy.PIPELINED)) {
            loader.await(0);
            assertThatThrownBy(() -> loader.await(1)).hasMessage("layer 1 is unreadable");
            assertThatThrownBy(() -> loader.await(2)).hasMessage("layer 1 is unreadable");
        }
        assertThatThrownBy(() -> LayerLoader.start(stages, LayerLoader.Policy.EAGER)).hasMessage("layer 1 is unreadable");
        try (LayerLoader loader = LayerLoader.start(stages, LayerLoader.Policy.LAYERWISE)) {
            assertThatThrownBy(() -> loader.await(2)).hasMessage("layer 1 is unreadable");
        }
    }

    @Test
    void aCorruptedLayerOfAPackedFileIsNeverComputedWith(@TempDir Path dir) throws Exception {
        Path file = dir.resolve("m.jqw");
        int[] tokens;
        try (Checkpoint c = TestModels.stories260K()) {
            ModelPacker.pack(c, new ModelPacker.Options(TestModels.plan(c, 5), ModelPacker.KEEPABLE, null), file, (done, total, name) -> {});
            tokens = Tokenizer.of(c.vocabulary().orElseThrow()).encode("Once upon a time, there was a little girl");
        }
        float[] pipelined, eager;
        try (LoadedModel m = open(file, LayerLoader.Policy.PIPELINED)) {
            pipelined = m.model().newSession(tokens.length).forward(tokens, 0);
        }
        try (LoadedModel m = open(file, LayerLoader.Policy.EAGER)) {
            eager = m.model().newSession(tokens.length).forward(tokens, 0);
        }
        assertThat(pipelined).containsExactly(eager);

        JqwLayer third;
        try (JqwFile f = JqwFile.open(file)) {
            third = f.layers().get(3);
        }
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.READ, StandardOpenOption.WRITE)) {
            ByteBuffer b = ByteBuffer.allocate(1);
            long at = third.offset() + third.length() / 2;
            ch.read(b, at);
            b.put(0, (byte) (b.get(0) ^ 0x10)).rewind();
            ch.write(b, at);
        }
        for (LayerLoader.Policy policy : LayerLoader.Policy.values()) {
            assertThatThrownBy(() -> {
                try (LoadedModel m = open(file, policy)) {
                    m.model().newSession(tokens.length).forward(tokens, 0);
                }
            }).as(policy.name()).hasMessageContaining("checksum mismatch in layer " + third.name());
        }
    }

    private static LoadedModel open(Path file, LayerLoader.Policy policy) throws Exception {
        return LoadedModel.open(file, null, PackedModelLoader.Mode.WEIGHT_ONLY, KernelChoice.AUTO, Compute.vector(), policy);
    }
}
