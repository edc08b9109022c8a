package io.flix.flink.architecture;

import com.tngtech.archunit.base.DescribedPredicate;
import com.tngtech.archunit.core.domain.JavaClass;
import com.tngtech.archunit.core.domain.JavaCodeUnit;
import com.tngtech.archunit.core.domain.JavaField;
import com.tngtech.archunit.core.domain.JavaMember;
import com.tngtech.archunit.lang.ArchCondition;
import com.tngtech.archunit.lang.ArchRule;
import com.tngtech.archunit.lang.ConditionEvents;
import com.tngtech.archunit.lang.SimpleConditionEvent;
import com.tngtech.archunit.library.dependencies.SliceAssignment;
import com.tngtech.archunit.library.dependencies.SliceIdentifier;

import java.util.LinkedHashSet;
import java.util.Set;

import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.members;
import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;
import static com.tngtech.archunit.library.dependencies.SlicesRuleDefinition.slices;

/**
 * The operator module's package rules, for a root package (the API) with its builder and the internal packages
 * under it. Parameterized by the root so that {@link OperatorRulesPlantedTest} can show each one failing on the
 * planted fixtures under {@code io.flix.flink.architecture.planted}; {@link OperatorLayersTest} applies them to
 * {@code io.flix.flink}.
 */
final class OperatorRules {

    private OperatorRules() {
    }

    /** Every package under the root is a slice of its own, the builder apart from the rest of the root. */
    static ArchRule noPackageCycles(String root, String builder) {
        return slices().assignedFrom(new SliceAssignment() {
            @Override
            public SliceIdentifier getIdentifierOf(JavaClass javaClass) {
                final String pkg = javaClass.getPackageName();
                if (!pkg.equals(root) && !pkg.startsWith(root + ".")) {
                    return SliceIdentifier.ignore();
                }
                return SliceIdentifier.of(isBuilder(javaClass, builder) ? "the builder " + builder : pkg);
            }

            @Override
            public String getDescription() {
                return "the packages under " + root + ", its builder apart";
            }
        }).should().beFreeOfCycles();
    }

    /** Internals get what they need from the builder as values, so that the builder alone depends on them. */
    static ArchRule internalsDoNotUseTheBuilder(String root, String builder) {
        return noClasses().that().resideInAPackage(root + ".*..")
                .should().dependOnClassesThat(builder(builder))
                .because("the builder wires the internals; what they need from it comes through their constructors");
    }

    /** The root's types other than the builder are values and interfaces a user holds: no internals behind them. */
    static ArchRule onlyTheBuilderReachesInternals(String root, String builder) {
        return noClasses().that().resideInAPackage(root).and(DescribedPredicate.not(builder(builder)))
                .should().dependOnClassesThat().resideInAPackage(root + ".*..")
                .because("only the builder adds the operators; the API's values stand on their own");
    }

    /** What a user sees of the root (public members of public classes) names no internal type. */
    static ArchRule publicApiNamesNoInternalType(String root) {
        return members().that().areDeclaredInClassesThat().resideInAPackage(root)
                .and().areDeclaredInClassesThat().arePublic().and().arePublic()
                .should(new ArchCondition<JavaMember>("name no type of the packages under " + root) {
                    @Override
                    public void check(JavaMember member, ConditionEvents events) {
                        final Set<JavaClass> named = new LinkedHashSet<>();
                        if (member instanceof JavaField field) {
                            named.addAll(field.getType().getAllInvolvedRawTypes());
                        }
                        if (member instanceof JavaCodeUnit unit) {
                            named.addAll(unit.getReturnType().getAllInvolvedRawTypes());
                            unit.getParameterTypes().forEach(t -> named.addAll(t.getAllInvolvedRawTypes()));
                        }
                        for (JavaClass type : named) {
                            if (type.getPackageName().startsWith(root + ".")) {
                                events.add(SimpleConditionEvent.violated(member,
                                        member.getFullName() + " names the internal type " + type.getName()));
                            }
                        }
                    }
                });
    }

    /** The SQL connector's changelog readers and snapshots serve the lookups, never the other way round. */
    static ArchRule changelogAndSnapshotsDoNotUseLookups(String root) {
        return noClasses().that().resideInAnyPackage(root + ".table.changelog..", root + ".table.snapshot..")
                .should().dependOnClassesThat().resideInAPackage(root + ".table.lookup..")
                .because("the lookups read the dimension that the changelog and the snapshots fill");
    }

    /** They fill the dimension through interfaces of their own, so that the dimension alone starts them. */
    static ArchRule changelogAndSnapshotsDoNotUseTheDimension(String root) {
        return noClasses().that().resideInAnyPackage(root + ".table.changelog..", root + ".table.snapshot..")
                .should().dependOnClassesThat().resideInAPackage(root + ".table.dimension..")
                .because("the dimension starts its changelog reader and snapshot writer; they see it as"
                        + " ChangelogTarget and SnapshotSource");
    }

    private static boolean isBuilder(JavaClass javaClass, String builder) {
        return javaClass.getName().equals(builder) || javaClass.getName().startsWith(builder + "$");
    }

    private static DescribedPredicate<JavaClass> builder(String builder) {
        return DescribedPredicate.describe("the builder " + builder, c -> isBuilder(c, builder));
    }
}
