package io.flix.index.architecture;

import com.tngtech.archunit.core.importer.ImportOption;
import com.tngtech.archunit.junit.AnalyzeClasses;
import com.tngtech.archunit.junit.ArchTest;
import com.tngtech.archunit.lang.ArchRule;

import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;
import static com.tngtech.archunit.library.dependencies.SlicesRuleDefinition.slices;

/** The index library's layers (DESIGN.md): no Flink in it, JCuda in the GPU backend only, no package cycles. */
@AnalyzeClasses(packages = "io.flix.index", importOptions = ImportOption.DoNotIncludeTests.class)
class IndexLayersTest {

    @ArchTest
    static final ArchRule noFlinkTypesInTheIndexLibrary = noClasses().that().resideInAPackage("io.flix.index..")
            .should().dependOnClassesThat().resideInAnyPackage("org.apache.flink..")
            .because("the index library is usable without Flink; the operators adapt it to Flink");

    @ArchTest
    static final ArchRule jcudaOnlyInTheGpuBackend = noClasses().that().resideInAPackage("io.flix.index..")
            .and().resideOutsideOfPackage("io.flix.index.gpu..")
            .should().dependOnClassesThat().resideInAnyPackage("jcuda..")
            .because("the GPU backend is the one place that talks to CUDA");

    @ArchTest
    static final ArchRule noPackageCycles = slices().matching("io.flix.index.(*)..").should().beFreeOfCycles();
}
