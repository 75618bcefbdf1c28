package jquant.examples;

import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.jar.JarFile;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * What {@code mvn install} publishes of each library module beside its jar: the {@code -sources} and
 * {@code -javadoc} jars an IDE shows. It runs at {@code verify} (this module's pom), after the modules this
 * one uses were packaged in the same build; a build without them packaged has nothing to look at.
 */
class PublishedJarsTest {
    /** Each library module this one uses, so that a build of it packages them first, and a class whose source and page its jars must hold. */
    private static final List<List<String>> MODULES = List.of(List.of("core", "jquant/core/WorkerPool"),
            List.of("formats", "jquant/formats/Checkpoint"), List.of("quantize", "jquant/quantize/GreedyBitAllocator"),
            List.of("pack", "jquant/pack/model/ModelPacker"), List.of("runtime", "jquant/runtime/LoadedModel"),
            List.of("calibration", "jquant/calibration/Calibrator"), List.of("reports", "jquant/reports/Evaluation"));

    @Test
    void everyLibraryModuleHasSourcesAndJavadocBesideItsJar() throws IOException {
        Assumptions.assumeTrue(Files.exists(jar("formats", "")), "the library modules are not packaged: nothing to check");
        for (List<String> module : MODULES) {
            String name = module.get(0), type = module.get(1);
            assertThat(jar(name, "")).as(name).exists();
            for (String classifier : List.of("-sources", "-javadoc")) assertThat(jar(name, classifier)).as(name).exists();
            try (JarFile sources = new JarFile(jar(name, "-sources").toFile()); JarFile javadoc = new JarFile(jar(name, "-javadoc").toFile())) {
                assertThat(sources.getEntry(type + ".java")).as(sources.getName() + " holds " + type + ".java").isNotNull();
                assertThat(javadoc.getEntry(type + ".html")).as(javadoc.getName() + " holds " + type + ".html").isNotNull();
                assertThat(javadoc.getEntry("index.html")).as(javadoc.getName()).isNotNull();
            }
        }
    }

    /** {@code ../<module>/target/jquant-<module>-<version><classifier>.jar}, whatever the version; a path that does not exist if there is none. */
    private static Path jar(String module, String classifier) throws IOException {
        Path target = Path.of("..", module, "target");
        if (!Files.isDirectory(target)) return target.resolve("jquant-" + module + classifier + ".jar");
        String pattern = "jquant-" + module + "-[0-9][^/]*" + java.util.regex.Pattern.quote(classifier) + "\\.jar";
        try (Stream<Path> files = Files.list(target)) {
            return files.filter(f -> f.getFileName().toString().matches(pattern))
                    .filter(f -> !classifier.isEmpty() || !f.getFileName().toString().matches(".*-(sources|javadoc)\\.jar"))
                    .findFirst().orElse(target.resolve("jquant-" + module + classifier + ".jar"));
        }
    }
}
