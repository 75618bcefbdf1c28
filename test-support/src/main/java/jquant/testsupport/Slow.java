package jquant.testsupport;

import org.junit.jupiter.api.Tag;

import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

/**
 * A test that runs a real model or the whole pipeline (seconds, not milliseconds). {@code ./run-tests}
 * runs it; {@code ./run-tests -Pfast} leaves it out for quick loops.
 */
@Target({ElementType.TYPE, ElementType.METHOD})
@Retention(RetentionPolicy.RUNTIME)
@Tag(Slow.TAG)
public @interface Slow {
    String TAG = "slow";
}
