package io.flix.examples.cluster;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.File;
import java.nio.file.Files;
import java.nio.file.Path;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The clients' class-data archive is asked for only where a JVM can write one. */
class ClientClassArchiveTest {

    @Test
    void aFolderOnTheClassPathRulesTheArchiveOut(@TempDir Path dir) throws Exception {
        final Path jar = Files.createFile(dir.resolve("a.jar"));
        final Path classes = Files.createDirectories(dir.resolve("classes"));
        Files.createFile(classes.resolve("A.class"));
        assertFalse(FlinkSessionCluster.canArchiveClasses(jar + File.pathSeparator + classes));
    }

    @Test
    void jarsOnlyAreArchivedWhereTheRuntimeHasItsBaseArchive(@TempDir Path dir) throws Exception {
        final boolean baseArchive = Files.isRegularFile(
                Path.of(System.getProperty("java.home"), "lib", "server", "classes.jsa"));
        final String jars = Files.createFile(dir.resolve("a.jar")) + File.pathSeparator
                + Files.createFile(dir.resolve("b.jar"));
        if (!baseArchive) {
            assertFalse(FlinkSessionCluster.canArchiveClasses(jars), "no base archive, no dynamic one");
            return;
        }
        assertTrue(FlinkSessionCluster.canArchiveClasses(jars));
    }
}
