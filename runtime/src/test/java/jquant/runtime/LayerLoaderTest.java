package jquant.runtime;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import org.junit.jupiter.api.Test;

/**
 * Layer-pipelined loading: stages complete in order, the forward pass waits only for the stage it
 * needs, and a failed stage fails every wait from it on (a packed file's corrupted layer: pack's
 * PackedModelLoaderTest).
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
}
