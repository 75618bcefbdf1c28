package jquant.runtime.kernels;

/** {@link Int8Dot} as a plain loop: the oracle. */
public final class ScalarInt8Dot implements Int8Dot {
    @Override
    public int dot(byte[] a, int aOff, byte[] b, int bOff, int len) {
        int sum = 0;
        for (int k = 0; k < len; k++) sum += a[aOff + k] * b[bOff + k];
        return sum;
    }
}
