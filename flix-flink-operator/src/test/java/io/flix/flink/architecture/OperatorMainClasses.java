package io.flix.flink.architecture;

import io.flix.flink.FlixEnrichment;

import com.tngtech.archunit.core.importer.ImportOption;
import com.tngtech.archunit.core.importer.Location;

/**
 * The operator module's main classes only: those from the class folder or jar that holds {@link FlixEnrichment}.
 * ArchUnit's own {@code DoNotIncludeTests} knows Maven's, Gradle's and IntelliJ's test folders by name; a class path
 * laid out otherwise (the GPU machine's pack) would let the test classes in, and with them their uses of the builder.
 */
public final class OperatorMainClasses implements ImportOption {

    private static final String MAIN = FlixEnrichment.class.getProtectionDomain().getCodeSource().getLocation()
            .getPath();

    @Override
    public boolean includes(Location location) {
        return location.asURI().toString().contains(MAIN);
    }
}
