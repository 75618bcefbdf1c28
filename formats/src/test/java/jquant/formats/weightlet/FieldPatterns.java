package jquant.formats.weightlet;

import java.util.Random;

/** Seeded random and adversarial unsigned B-bit fields for the codec tests. */
enum FieldPatterns {
    RANDOM, ZERO, MAX, ALTERNATING_ZERO_MAX, ALTERNATING_BITS;

    byte[] fields(int bits, int count, Random random) {
        int max = WeightletLayout.maxField(bits);
        byte[] f = new byte[count];
        for (int i = 0; i < count; i++) {
            f[i] = (byte) switch (this) {
                case RANDOM -> random.nextInt(max + 1);
                case ZERO -> 0;
                case MAX -> max;
                case ALTERNATING_ZERO_MAX -> (i & 1) == 0 ? 0 : max;
                case ALTERNATING_BITS -> ((i & 1) == 0 ? 0x55 : 0xAA) & max;
            };
        }
        return f;
    }
}
