package io.flix.flink.architecture;

import io.flix.flink.FlixEnrichment;
import io.flix.flink.keyed.FlixEnrichmentOperator;

import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The layer rules see the module's main classes, and no test class. */
class OperatorMainClassesTest {

    @Test
    void mainClassesInTestClassesOut() {
        final JavaClasses classes = new ClassFileImporter().withImportOption(new OperatorMainClasses())
                .importPackages("io.flix.flink");
        assertTrue(classes.contain(FlixEnrichment.class));
        assertTrue(classes.contain(FlixEnrichmentOperator.class));
        assertFalse(classes.contain(OperatorMainClassesTest.class));
        assertFalse(classes.contain(OperatorLayersTest.class));
    }
}
