package jquant.runtime;

import java.lang.foreign.Arena;
import java.time.Duration;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import jdk.jfr.consumer.RecordedMethod;
import jdk.jfr.consumer.RecordingStream;
import jquant.formats.DType;

/**
 * Run by {@link KernelWarmupTest} in a JVM of its own, where no kernel has run yet: one warm-up
 * ({@code shared}, on a model's stored bytes, or a ternary type's name), then, one per line, every
 * method C2 compiled at its top tier ({@code Class.method}), as JFR's compilation events report
 * them. It waits for the methods named after the warm-up, or two minutes at most.
 */
final class KernelWarmupProbe {
    private KernelWarmupProbe() {}

    public static void main(String[] args) throws Exception {
        List<String> awaited = List.of(args).subList(1, args.length);
        Set<String> compiled = ConcurrentHashMap.newKeySet();
        CountDownLatch done = new CountDownLatch(1);
        try (RecordingStream events = new RecordingStream(); Arena arena = Arena.ofConfined()) {
            events.enable("jdk.Compilation").withThreshold(Duration.ZERO);
            events.onEvent("jdk.Compilation", e -> {
                if (e.getShort("compileLevel") != 4 || e.getBoolean("isOsr") || !e.getBoolean("succeded")) return;
                RecordedMethod m = e.getValue("method");
                String type = m.getType().getName();
                compiled.add(type.substring(type.lastIndexOf('.') + 1) + "." + m.getName());
                if (compiled.containsAll(awaited)) done.countDown();
            });
            events.startAsync();
            if (args[0].equals("shared")) KernelWarmup.warmShared(arena.allocate(1 << 16, 64));
            else KernelWarmup.warmTernary(DType.valueOf(args[0]));
            done.await(2, TimeUnit.MINUTES);
        }
        compiled.stream().sorted().forEach(System.out::println);
    }
}
