package io.flix.index.gpu;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

import org.junit.jupiter.api.Assumptions;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Reads the kernel sources of a module (no GPU needed) to check them against their Java side: header constants
 * against a class's static constants, and each kernel's parameters against its typed launch.
 */
public final class KernelSources {

    private static final Pattern DEFINE =
            Pattern.compile("^#define\\s+(\\w+)\\s+(\\S+)\\s*(?://.*)?$", Pattern.MULTILINE);
    /** A macro, its body continued over lines ending in a backslash (LOOKUP_PARAMS). */
    private static final Pattern MACRO =
            Pattern.compile("^#define\\s+(\\w+)\\s+((?:.*\\\\\\n)*.*)$", Pattern.MULTILINE);
    private static final Pattern KERNEL = Pattern.compile("extern \"C\" __global__ void\\s+"
            + "(?:__launch_bounds__\\((?:[^()]|\\([^()]*\\))*\\)\\s*)?(\\w+)\\s*\\(([^)]*)\\)");
    /** A typed launch: a package-private void method of the class, its parameters and body. */
    private static final Pattern LAUNCH =
            Pattern.compile("\\n    void (\\w+)\\(([^)]*)\\) \\{(.*?)\\n    }", Pattern.DOTALL);
    private static final Pattern MARSHAL = Pattern.compile("\\b(ptr|i32|i64)\\((\\w+)\\)");

    /** One parameter: its Java type (CUdeviceptr, int or long) and name. */
    private record Parameter(String type, String name) {
    }

    private final String module;
    private final Path cuda;
    private final Path javaSources;

    /**
     * The sources of {@code module}: from the test class path ({@code kernel-sources/<module>/}, copied there by the
     * module's pom, so that a packed test jar carries them), else from its directory where run from the repository
     * root or the working directory (Maven runs a module's tests there).
     */
    public KernelSources(String module) {
        this(module, Files.isDirectory(Path.of(module)) ? Path.of(module) : Path.of(""));
    }

    /** The sources of {@code module}, its directory (the fallback to the class path's copy) {@code dir}. */
    KernelSources(String module, Path dir) {
        this.module = module;
        this.cuda = dir.resolve("src/main/cuda");
        this.javaSources = dir.resolve("src/main/java/io/flix/index/gpu");
    }

    /** A kernel source or header of this module, as text. */
    public String cudaFile(String name) throws IOException {
        return read("cuda/" + name, cuda.resolve(name));
    }

    private String javaFile(String name) throws IOException {
        return read("java/" + name, javaSources.resolve(name));
    }

    /** The class path's copy; else the file; else the test is skipped saying where it looked. */
    private String read(String resource, Path file) throws IOException {
        final String name = "kernel-sources/" + module + "/" + resource;
        try (InputStream in = KernelSources.class.getClassLoader().getResourceAsStream(name)) {
            if (in != null) {
                return new String(in.readAllBytes(), StandardCharsets.UTF_8);
            }
        }
        if (Files.isRegularFile(file)) {
            return Files.readString(file);
        }
        Assumptions.abort("the kernel sources are not here: no " + name + " on the class path (the module's pom "
                + "copies them into its test resources) and no " + file.toAbsolutePath());
        return null;
    }

    /** The {@code #define NAME VALUE} lines of a header's text (a comment may follow): integer literals, or INT64_MIN. */
    public Map<String, Long> headerConstants(String header) {
        final Map<String, Long> constants = new TreeMap<>();
        final Matcher m = DEFINE.matcher(header);
        while (m.find()) {
            final String value = m.group(2);
            constants.put(m.group(1), value.equals("INT64_MIN") ? Long.MIN_VALUE : Long.decode(value));
        }
        return constants;
    }

    /** The static int and long fields of a class, by name. */
    public static Map<String, Long> javaConstants(Class<?> type) throws IllegalAccessException {
        final Map<String, Long> constants = new TreeMap<>();
        for (Field f : type.getDeclaredFields()) {
            if (Modifier.isStatic(f.getModifiers()) && (f.getType() == int.class || f.getType() == long.class)) {
                f.setAccessible(true);
                constants.put(f.getName(), f.getLong(null));
            }
        }
        return constants;
    }

    /**
     * Every kernel of the file has a launch named as it is in camel case, and every launch a kernel; the launch
     * takes the kernel's parameters, by name, in order, typed one to one (pointer: CUdeviceptr, int: int, i64:
     * long), besides the grid's own ({@code @GridRows}); its body launches that kernel by name and marshals each
     * parameter in order as its type needs (ptr, i32, i64).
     */
    public void assertLaunchesMatchKernels(String cudaFile, String javaFile) throws IOException {
        final Map<String, List<Parameter>> kernels = kernels(cudaFile(cudaFile));
        assertFalse(kernels.isEmpty(), "no kernel found in " + cudaFile);
        final String java = javaFile(javaFile);
        final Map<String, String> launchOf = new TreeMap<>();
        final Matcher m = LAUNCH.matcher(java);
        while (m.find()) {
            final String kernel = snakeCase(m.group(1));
            final List<Parameter> expected = kernels.get(kernel);
            if (expected == null) {
                throw new AssertionError(javaFile + "." + m.group(1) + " launches no kernel of " + cudaFile);
            }
            launchOf.put(kernel, m.group(1));
            final List<Parameter> declared = javaParameters(m.group(2));
            assertEquals(expected, declared, javaFile + "." + m.group(1) + " against " + kernel + " in " + cudaFile);
            final String body = m.group(3);
            if (!body.contains("\"" + kernel + "\"")) {
                throw new AssertionError(javaFile + "." + m.group(1) + " does not launch \"" + kernel + "\"");
            }
            final List<Parameter> marshalled = new ArrayList<>();
            final Matcher arg = MARSHAL.matcher(body);
            while (arg.find()) {
                marshalled.add(new Parameter(switch (arg.group(1)) {
                    case "ptr" -> "CUdeviceptr";
                    case "i32" -> "int";
                    default -> "long";
                }, arg.group(2)));
            }
            assertEquals(expected, marshalled, javaFile + "." + m.group(1) + " marshals " + kernel
                    + "'s parameters out of order or as the wrong type");
        }
        assertEquals(new TreeMap<>(kernels).keySet(), launchOf.keySet(), "kernels of " + cudaFile
                + " without a typed launch in " + javaFile + ", or launches without a kernel");
    }

    /** The kernels of a file: {@code extern "C" __global__} functions, their parameters typed as Java's. */
    private static Map<String, List<Parameter>> kernels(String source) {
        final Map<String, String> macros = new HashMap<>();
        final Matcher macro = MACRO.matcher(source);
        while (macro.find()) {
            macros.put(macro.group(1), macro.group(2).replace("\\\n", " "));
        }
        final Map<String, List<Parameter>> kernels = new HashMap<>();
        final Matcher m = KERNEL.matcher(source);
        while (m.find()) {
            final String list = m.group(2).trim();
            final List<Parameter> parameters = new ArrayList<>();
            for (String p : macros.getOrDefault(list, list).split(",")) {
                final String[] words = p.trim().replace("*", " * ").split("\\s+");
                final String name = words[words.length - 1];
                final boolean pointer = p.contains("*");
                final String base = String.join(" ", List.of(words).subList(0, words.length - 1)).replace("*", "")
                        .replace("const", "").replace("__restrict__", "").trim().replaceAll("\\s+", " ");
                parameters.add(new Parameter(pointer ? "CUdeviceptr" : switch (base) {
                    case "int", "unsigned" -> "int";
                    case "i64", "long long" -> "long";
                    default -> throw new AssertionError("kernel " + m.group(1) + ": no Java type for " + p.trim());
                }, name));
            }
            if (kernels.put(m.group(1), parameters) != null) {
                throw new AssertionError("kernel " + m.group(1) + " declared twice");
            }
        }
        return kernels;
    }

    /** A launch's declared parameters, less those annotated {@code @GridRows} (the grid's, not the kernel's). */
    private static List<Parameter> javaParameters(String list) {
        final List<Parameter> parameters = new ArrayList<>();
        for (String p : list.split(",")) {
            final String[] words = p.trim().split("\\s+");
            if (!words[0].equals("@GridRows")) {
                parameters.add(new Parameter(words[words.length - 2], words[words.length - 1]));
            }
        }
        return parameters;
    }

    private static String snakeCase(String camel) {
        return camel.replaceAll("([a-z0-9])([A-Z])", "$1_$2").toLowerCase();
    }
}
