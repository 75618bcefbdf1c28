package jquant.core;

import java.util.function.Predicate;
import java.util.function.Supplier;

/**
 * A thread's few reusable objects: each thread keeps a ring of slots, searched with a test, and a new
 * object goes to the next slot in turn when none passes. Decode quantizes an input column for every
 * matrix; a new column each time was most of a step's garbage (bench/RESULTS.md), and a model asks for
 * two or three shapes, so a ring of a few slots finds them all.
 */
public final class PerThreadRing<T> {

    private final int slots;
    private final ThreadLocal<Ring> rings = ThreadLocal.withInitial(Ring::new);

    private final class Ring {
        final Object[] items = new Object[slots];
        int next;
    }

    /** A ring of {@code slots} objects a thread. */
    public PerThreadRing(int slots) {
        if (slots < 1) throw new IllegalArgumentException("a ring needs at least one slot, got " + slots);
        this.slots = slots;
    }

    /** This thread's object that passes {@code fits}, or a new one from {@code make}, kept in the ring's next slot. */
    @SuppressWarnings("unchecked")
    public T get(Predicate<? super T> fits, Supplier<? extends T> make) {
        Ring ring = rings.get();
        for (Object o : ring.items) if (o != null && fits.test((T) o)) return (T) o;
        T made = make.get();
        ring.items[ring.next] = made;
        ring.next = (ring.next + 1) % slots;
        return made;
    }
}
