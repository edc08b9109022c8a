package io.flix.flink.architecture;

import com.tngtech.archunit.core.importer.ImportOption;
import com.tngtech.archunit.junit.AnalyzeClasses;
import com.tngtech.archunit.junit.ArchTest;
import com.tngtech.archunit.lang.ArchRule;

import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;
import static com.tngtech.archunit.library.dependencies.SlicesRuleDefinition.slices;

/** The operators' layers (DESIGN.md): they reach the GPU only through the index library, and have no package cycles. */
@AnalyzeClasses(packages = "io.flix.flink", importOptions = ImportOption.DoNotIncludeTests.class)
class OperatorLayersTest {

    @ArchTest
    static final ArchRule noJcudaInTheOperators = noClasses().that().resideInAPackage("io.flix.flink..")
            .should().dependOnClassesThat().resideInAnyPackage("jcuda..", "io.flix.index.gpu..")
            .because("the GPU backend is the index library's; the operators choose it through FlixConfig");

    @ArchTest
    static final ArchRule noPackageCycles = slices().matching("io.flix.flink.(*)..").should().beFreeOfCycles();
}
