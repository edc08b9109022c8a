package io.flix.flink.architecture;

import io.flix.flink.FlixEnrichment;

import com.tngtech.archunit.junit.AnalyzeClasses;
import com.tngtech.archunit.junit.ArchTest;
import com.tngtech.archunit.lang.ArchRule;

import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;

/**
 * The operators' layers (DESIGN.md): they reach the GPU only through the index library; the API package holds what a
 * user calls or receives, its builder alone reaches the internals, the internals never the builder; no package
 * cycles. Each rule of {@link OperatorRules} is shown failing on a planted violation in {@link OperatorRulesPlantedTest}.
 */
@AnalyzeClasses(packages = "io.flix.flink", importOptions = OperatorMainClasses.class)
class OperatorLayersTest {

    private static final String ROOT = "io.flix.flink";
    private static final String BUILDER = FlixEnrichment.class.getName();

    @ArchTest
    static final ArchRule noJcudaInTheOperators = noClasses().that().resideInAPackage("io.flix.flink..")
            .should().dependOnClassesThat().resideInAnyPackage("jcuda..", "io.flix.index.gpu..")
            .because("the GPU backend is the index library's; the operators choose it through FlixConfig");

    @ArchTest
    static final ArchRule noPackageCycles = OperatorRules.noPackageCycles(ROOT, BUILDER);

    @ArchTest
    static final ArchRule internalsDoNotUseTheBuilder = OperatorRules.internalsDoNotUseTheBuilder(ROOT, BUILDER);

    @ArchTest
    static final ArchRule onlyTheBuilderReachesInternals = OperatorRules.onlyTheBuilderReachesInternals(ROOT, BUILDER);

    @ArchTest
    static final ArchRule publicApiNamesNoInternalType = OperatorRules.publicApiNamesNoInternalType(ROOT);

    @ArchTest
    static final ArchRule changelogAndSnapshotsDoNotUseLookups = OperatorRules.changelogAndSnapshotsDoNotUseLookups(ROOT);

    @ArchTest
    static final ArchRule changelogAndSnapshotsDoNotUseTheDimension =
            OperatorRules.changelogAndSnapshotsDoNotUseTheDimension(ROOT);
}
