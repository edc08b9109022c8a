package io.flix.flink.architecture;

import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.lang.ArchRule;
import com.tngtech.archunit.lang.EvaluationResult;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Each rule of {@link OperatorRules} fails on its planted violation (package {@code planted}): a rule that cannot fail
 * guards nothing. Where a tree planted for another rule is clean for it, the rule is shown passing there too, so that
 * the failure is the planted one.
 */
class OperatorRulesPlantedTest {

    private static final String PLANTED = "io.flix.flink.architecture.planted";

    @Test
    void aPackageCycleIsReported() {
        final String root = PLANTED + ".cycle";
        assertViolation(OperatorRules.noPackageCycles(root, root + ".Builder"), root, "First", "Second");
        assertClean(OperatorRules.noPackageCycles(PLANTED + ".tables", PLANTED + ".tables.Builder"), PLANTED + ".tables");
    }

    @Test
    void anInternalClassUsingTheBuilderIsReported() {
        final String root = PLANTED + ".builder";
        assertViolation(OperatorRules.internalsDoNotUseTheBuilder(root, root + ".Builder"), root, "ReadsTheBuilder");
        final String api = PLANTED + ".api";
        assertClean(OperatorRules.internalsDoNotUseTheBuilder(api, api + ".Builder"), api);
    }

    @Test
    void anApiValueReachingAnInternalIsReported() {
        final String root = PLANTED + ".api";
        assertViolation(OperatorRules.onlyTheBuilderReachesInternals(root, root + ".Builder"), root, "Value", "Hidden");
        final String builder = PLANTED + ".builder";
        assertClean(OperatorRules.onlyTheBuilderReachesInternals(builder, builder + ".Builder"), builder);
    }

    @Test
    void anInternalTypeInAPublicSignatureIsReported() {
        final String root = PLANTED + ".api";
        assertViolation(OperatorRules.publicApiNamesNoInternalType(root), root, "Builder.operators()", "Hidden");
        assertClean(OperatorRules.publicApiNamesNoInternalType(PLANTED + ".builder"), PLANTED + ".builder");
    }

    @Test
    void aChangelogReaderUsingTheLookupsIsReported() {
        final String root = PLANTED + ".tables";
        assertViolation(OperatorRules.changelogAndSnapshotsDoNotUseLookups(root), root, "Reader", "Lookups");
    }

    @Test
    void aSnapshotWriterUsingTheDimensionIsReported() {
        final String root = PLANTED + ".tables";
        assertViolation(OperatorRules.changelogAndSnapshotsDoNotUseTheDimension(root), root, "Writer", "Dimension");
    }

    private static void assertViolation(ArchRule rule, String packageName, String... named) {
        final EvaluationResult result = rule.evaluate(classes(packageName));
        assertTrue(result.hasViolation(), rule.getDescription() + " should fail on " + packageName);
        final String report = String.join("\n", result.getFailureReport().getDetails());
        for (String name : named) {
            assertTrue(report.contains(name), "the report names " + name + ":\n" + report);
        }
    }

    private static void assertClean(ArchRule rule, String packageName) {
        // a tree without the classes a rule is about is clean too
        final EvaluationResult result = rule.allowEmptyShould(true).evaluate(classes(packageName));
        assertFalse(result.hasViolation(), String.join("\n", result.getFailureReport().getDetails()));
    }

    private static JavaClasses classes(String packageName) {
        return new ClassFileImporter().importPackages(packageName);
    }
}
