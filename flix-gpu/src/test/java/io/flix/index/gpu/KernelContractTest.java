package io.flix.index.gpu;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

import java.io.IOException;
import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.TreeMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.junit.jupiter.api.Test;

/**
 * The Java side of the kernel contract agrees with the CUDA side, read from the sources (no GPU needed): a constant
 * or kernel signature changed on one side fails the build here.
 */
class KernelContractTest {

    private static final Path CUDA = Path.of("src/main/cuda");
    private static final Pattern DEFINE = Pattern.compile("^#define\\s+(\\w+)\\s+(\\S+)\\s*$", Pattern.MULTILINE);

    @Test
    void everyHeaderConstantEqualsItsJavaConstantAndNoneIsOnOneSideOnly() throws Exception {
        final Map<String, Long> header = headerConstants();
        assertFalse(header.isEmpty(), "no #define found in kernel_contract.h");
        final Map<String, Long> java = new TreeMap<>();
        for (Field f : KernelContract.class.getDeclaredFields()) {
            if (Modifier.isStatic(f.getModifiers()) && (f.getType() == int.class || f.getType() == long.class)) {
                java.put(f.getName(), f.getLong(null));
            }
        }
        assertEquals(header, java, "kernel_contract.h and KernelContract differ");
    }

    /** The header's {@code #define NAME VALUE} lines: integer literals, or INT64_MIN. */
    private static Map<String, Long> headerConstants() throws IOException {
        final Map<String, Long> constants = new TreeMap<>();
        final Matcher m = DEFINE.matcher(Files.readString(CUDA.resolve("kernel_contract.h")));
        while (m.find()) {
            final String value = m.group(2);
            constants.put(m.group(1), value.equals("INT64_MIN") ? Long.MIN_VALUE : Long.decode(value));
        }
        return constants;
    }
}
