package jquant.quantize;

/**
 * A binary max-heap of channels keyed by a double, in two parallel primitive arrays. Same
 * contract as a {@code java.util.PriorityQueue} with the comparator "key descending, then
 * channel id ascending", but without an object per entry: with 1.4M channels (a whole 8B model)
 * the object heap spent most of its time on cache misses chasing entries.
 */
final class ChannelHeap {

    private final double[] keys;
    private final int[] channels;
    private int size;

    ChannelHeap(int capacity) {
        keys = new double[capacity];
        channels = new int[capacity];
    }

    boolean isEmpty() { return size == 0; }

    int size() { return size; }

    /** Key of the top entry; the heap must not be empty. */
    double topKey() { return keys[0]; }

    /** Channel id of the top entry; the heap must not be empty. */
    int topChannel() { return channels[0]; }

    void push(double key, int channel) {
        int i = size++;
        while (i > 0) {
            int parent = (i - 1) >>> 1;
            if (!before(key, channel, keys[parent], channels[parent])) break;
            keys[i] = keys[parent];
            channels[i] = channels[parent];
            i = parent;
        }
        keys[i] = key;
        channels[i] = channel;
    }

    /** Removes the top entry. */
    void pop() {
        int last = --size;
        if (last == 0) return;
        double key = keys[last];
        int channel = channels[last];
        int i = 0;
        int half = last >>> 1;
        while (i < half) {
            int child = 2 * i + 1;
            int right = child + 1;
            if (right < last && before(keys[right], channels[right], keys[child], channels[child])) child = right;
            if (!before(keys[child], channels[child], key, channel)) break;
            keys[i] = keys[child];
            channels[i] = channels[child];
            i = child;
        }
        keys[i] = key;
        channels[i] = channel;
    }

    /** Whether entry a comes out before entry b: larger key first, then smaller channel id. */
    private static boolean before(double keyA, int channelA, double keyB, int channelB) {
        int c = Double.compare(keyA, keyB);
        return c > 0 || (c == 0 && channelA < channelB);
    }
}
