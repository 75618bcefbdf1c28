package jquant.runtime;

import java.util.Arrays;

/** A growable int array, to avoid boxing a text's worth of token ids. */
final class IntList {
    private int[] data;
    private int size;

    IntList(int capacity) {
        data = new int[Math.max(capacity, 4)];
    }

    void add(int value) {
        if (size == data.length) data = Arrays.copyOf(data, data.length * 2);
        data[size++] = value;
    }

    void addAll(int[] values) {
        if (size + values.length > data.length) data = Arrays.copyOf(data, Math.max(data.length * 2, size + values.length));
        System.arraycopy(values, 0, data, size, values.length);
        size += values.length;
    }

    int[] toArray() {
        return Arrays.copyOf(data, size);
    }
}
