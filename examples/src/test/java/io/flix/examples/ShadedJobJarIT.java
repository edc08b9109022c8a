package io.flix.examples;

import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.io.DataInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Enumeration;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.zip.ZipEntry;
import java.util.zip.ZipFile;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Checks the shaded job jar after {@code package} (Maven Failsafe, {@code mvn verify}): of JCuda it holds the
 * driver API's native library and not the natives nothing in it loads (the runtime API's, NVRTC's, the PTX
 * compiler's), and every JCuda class that a class of JCuda or of FliX in the jar refers to is in the jar, so that
 * leaving classes out cannot fail a class at load or verification time.
 */
class ShadedJobJarIT {

    private static final Pattern JCUDA_CLASS = Pattern.compile("(?:^|L)(jcuda/[A-Za-z0-9_/$]+)(?:;|$)");

    private static Set<String> entries;
    private static ZipFile jar;

    @BeforeAll
    static void open() throws IOException {
        final String path = System.getProperty("flix.jobJar");
        assertNotNull(path, "flix.jobJar: the shaded jar (set by the examples pom)");
        assertTrue(Files.isRegularFile(Path.of(path)), path + " is built by `package`");
        jar = new ZipFile(path);
        entries = new TreeSet<>();
        for (Enumeration<? extends ZipEntry> e = jar.entries(); e.hasMoreElements(); ) {
            entries.add(e.nextElement().getName());
        }
    }

    @Test
    void jcudaBringsTheDriverApisNativeLibraryAndNoOther() {
        final List<String> natives = entries.stream().filter(e -> e.startsWith("lib/libJ")).toList();
        assertEquals(1, natives.size(), "JCuda natives: " + natives);
        assertTrue(natives.get(0).matches("lib/libJCudaDriver-[0-9.]+-linux-x86_64\\.so"), natives.get(0));
        for (String left : List.of("jcuda/nvrtc/", "jcuda/nvptxcompiler/")) {
            assertTrue(entries.stream().noneMatch(e -> e.startsWith(left)), left + " is left out");
        }
    }

    @Test
    void everyJcudaClassReferencedFromTheJarIsInTheJar() throws IOException {
        final List<String> missing = new ArrayList<>();
        int classes = 0;
        for (String entry : entries) {
            if (!entry.endsWith(".class") || !(entry.startsWith("jcuda/") || entry.startsWith("io/flix/"))) {
                continue;
            }
            classes++;
            try (InputStream in = jar.getInputStream(jar.getEntry(entry))) {
                for (String referenced : jcudaReferences(in)) {
                    if (!entries.contains(referenced + ".class")) {
                        missing.add(entry + " -> " + referenced);
                    }
                }
            }
        }
        assertTrue(classes > 100, "found the classes of JCuda and FliX, " + classes);
        assertEquals(List.of(), missing);
    }

    /**
     * The JCuda classes a class file names in its constant pool: as classes, and inside field and method
     * descriptors and signatures.
     */
    private static Set<String> jcudaReferences(InputStream classFile) throws IOException {
        final DataInputStream in = new DataInputStream(classFile);
        assertEquals(0xCAFEBABE, in.readInt(), "a class file");
        in.readUnsignedShort(); // minor
        in.readUnsignedShort(); // major
        final int count = in.readUnsignedShort();
        final Set<String> references = new TreeSet<>();
        for (int i = 1; i < count; i++) {
            final int tag = in.readUnsignedByte();
            switch (tag) {
                case 1 -> { // Utf8: class names, descriptors, signatures, and names and strings too
                    final Matcher m = JCUDA_CLASS.matcher(in.readUTF());
                    while (m.find()) {
                        references.add(m.group(1));
                    }
                }
                case 7, 8, 16, 19, 20 -> in.skipBytes(2); // Class, String, MethodType, Module, Package
                case 15 -> in.skipBytes(3); // MethodHandle
                case 3, 4, 9, 10, 11, 12, 17, 18 -> in.skipBytes(4);
                case 5, 6 -> { // Long, Double: two slots
                    in.skipBytes(8);
                    i++;
                }
                default -> throw new IOException("constant pool tag " + tag);
            }
        }
        return references;
    }
}
