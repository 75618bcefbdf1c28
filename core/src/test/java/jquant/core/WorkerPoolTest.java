package jquant.core;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.Collections;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.atomic.AtomicIntegerArray;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * How {@link WorkerPool#forRange} cuts a job: every item once, whatever the threads; a short job in four
 * equal chunks a thread, each thread's share contiguous and taken from its front by its thread, from its
 * back by the others; a long job's chunks shrinking, each what is left over twice the threads, down to a
 * sixteenth of a thread's share.
 */
class WorkerPoolTest {

    private static final int COUNT = 1024;

    /** The chunks {@code [start, end)} the pool hands out for {@code COUNT} items of {@code workPerItem}, in item order. */
    private static List<int[]> chunks(WorkerPool pool, long workPerItem, AtomicIntegerArray runs) {
        List<int[]> chunks = Collections.synchronizedList(new ArrayList<>());
        pool.forRange(COUNT, workPerItem, (worker, start, end) -> {
            chunks.add(new int[] {start, end});
            for (int i = start; i < end; i++) runs.incrementAndGet(i);
        });
        List<int[]> sorted = new ArrayList<>(chunks);
        sorted.sort(Comparator.comparingInt(c -> c[0]));
        return sorted;
    }

    @ParameterizedTest(name = "{0} thread(s)")
    @ValueSource(ints = {1, 2, 3})
    void everyItemRunsOnceInShortAndLongJobs(int threads) {
        try (WorkerPool pool = new WorkerPool(threads)) {
            for (long work : new long[] {1_000, 1L << 20}) {
                AtomicIntegerArray runs = new AtomicIntegerArray(COUNT);
                List<int[]> chunks = chunks(pool, work, runs);
                for (int i = 0; i < COUNT; i++) assertThat(runs.get(i)).as("item %d of a job of %d a item", i, work).isEqualTo(1);
                assertThat(chunks.getFirst()[0]).isZero();
                assertThat(chunks.getLast()[1]).isEqualTo(COUNT);
                for (int c = 1; c < chunks.size(); c++) assertThat(chunks.get(c)[0]).as("chunk %d starts where the last ended", c).isEqualTo(chunks.get(c - 1)[1]);
            }
        }
    }

    @Test
    void aShortJobIsCutIntoFourEqualChunksAThread() {
        try (WorkerPool pool = new WorkerPool(2)) {
            List<int[]> chunks = chunks(pool, 1_000, new AtomicIntegerArray(COUNT));
            assertThat(chunks).hasSize(8).allSatisfy(c -> assertThat(c[1] - c[0]).isEqualTo(COUNT / 8));
        }
    }

    @ParameterizedTest(name = "round {0}")
    @ValueSource(ints = {1, 2, 3, 4, 5, 6, 7, 8})
    void aThreadReadsItsShareFrontToBackAndTheOthersFromTheirBack(int round) {
        try (WorkerPool pool = new WorkerPool(2)) {
            List<List<int[]>> taken = List.of(Collections.synchronizedList(new ArrayList<>()), Collections.synchronizedList(new ArrayList<>()));
            pool.forRange(COUNT, 1_000, (worker, start, end) -> {
                taken.get(worker).add(new int[] {start, end});
                Thread.onSpinWait();
            });
            int half = COUNT / 2;
            for (int w = 0; w < 2; w++) {
                int ownFrom = w * half, otherFrom = (1 - w) * half;
                int ownNext = ownFrom, otherEnd = otherFrom + half;
                for (int[] c : taken.get(w)) {
                    if (c[0] >= ownFrom && c[1] <= ownFrom + half) {
                        assertThat(c[0]).as("worker %d's next chunk of its own share", w).isEqualTo(ownNext);
                        ownNext = c[1];
                    } else {
                        assertThat(c[1]).as("worker %d's next chunk of the other's share, from its back", w).isEqualTo(otherEnd);
                        assertThat(c[0]).isGreaterThanOrEqualTo(otherFrom);
                        otherEnd = c[0];
                    }
                }
            }
        }
    }

    @Test
    void aLongJobsChunksShrinkToASixteenthOfAThreadsShare() {
        try (WorkerPool pool = new WorkerPool(2)) {
            List<int[]> chunks = chunks(pool, 1L << 20, new AtomicIntegerArray(COUNT));
            int smallest = COUNT / (2 * 16);
            assertThat(chunks.getFirst()[1]).as("the first chunk: all over twice the threads").isEqualTo(COUNT / 4);
            for (int c = 0; c < chunks.size(); c++) {
                int[] k = chunks.get(c);
                assertThat(k[1] - k[0]).as("chunk %d", c).isEqualTo(Math.min(COUNT - k[0], Math.max(smallest, (COUNT - k[0]) / 4)));
            }
            assertThat(chunks.get(chunks.size() - 2)[1] - chunks.get(chunks.size() - 2)[0]).as("the last whole chunk").isEqualTo(smallest);
        }
    }
}
