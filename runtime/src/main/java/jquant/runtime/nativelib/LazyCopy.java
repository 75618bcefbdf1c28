package jquant.runtime.nativelib;

import java.util.function.Supplier;

/**
 * A copy of stored weights in the form a native kernel reads, made by the first product that needs it
 * and read by every later one on any thread: made once, under a lock, then read without one. The
 * weightlet lanes and T2P's sixteen-row tiles are such copies.
 */
public final class LazyCopy<T> {

    private final Supplier<T> make;
    private volatile T copy;

    /** A copy that {@code make} makes (and may then drop the stored bytes' pages) at the first {@link #get}. */
    public LazyCopy(Supplier<T> make) {
        this.make = make;
    }

    /** The copy, made now if no caller has made it yet. */
    public T get() {
        T c = copy;
        if (c == null) {
            synchronized (this) {
                c = copy;
                if (c == null) copy = c = make.get();
            }
        }
        return c;
    }
}
