package jquant.quantize;

import org.junit.jupiter.api.Test;

import java.util.Comparator;
import java.util.PriorityQueue;
import java.util.SplittableRandom;

import static org.assertj.core.api.Assertions.assertThat;

class ChannelHeapTest {

    record Entry(double key, int channel) {}

    @Test
    void popsInTheSameOrderAsAPriorityQueueWithTheSameComparator() {
        Comparator<Entry> order = Comparator.comparingDouble(Entry::key).reversed().thenComparingInt(Entry::channel);
        SplittableRandom random = new SplittableRandom(61);
        for (int trial = 0; trial < 50; trial++) {
            int capacity = 1 + random.nextInt(2000);
            ChannelHeap heap = new ChannelHeap(capacity);
            PriorityQueue<Entry> oracle = new PriorityQueue<>(order);
            boolean[] inHeap = new boolean[capacity];
            for (int op = 0; op < 5 * capacity; op++) {
                int channel = random.nextInt(capacity);
                if (!inHeap[channel] && random.nextInt(3) > 0) {
                    // Few distinct keys, so ties (and 0.0) are common.
                    double key = random.nextInt(4) == 0 ? 0.0 : random.nextInt(50) / 7.0;
                    heap.push(key, channel);
                    oracle.add(new Entry(key, channel));
                    inHeap[channel] = true;
                } else if (!oracle.isEmpty()) {
                    Entry expected = oracle.poll();
                    assertThat(heap.topKey()).isEqualTo(expected.key());
                    assertThat(heap.topChannel()).isEqualTo(expected.channel());
                    heap.pop();
                    inHeap[expected.channel()] = false;
                }
                assertThat(heap.size()).isEqualTo(oracle.size());
            }
        }
    }
}
