package io.flix.examples;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

class ArgsTest {

    @Test
    void readsPairsFlagsAndFallbacks() {
        final Args args = Args.of(new String[] {"--keys", "10_000_000", "--quick", "--backend", "gpu"});
        assertEquals(10_000_000L, args.number("--keys", 1));
        assertEquals(7L, args.number("--lookups", 7));
        assertTrue(args.flag("--quick"));
        assertFalse(args.flag("--restore"));
        assertEquals("gpu", args.text("--backend", "cpu"));
        assertEquals("cpu", args.text("--mode", "cpu"));
    }

    @Test
    void aBareOptionTakesItsBareValueWhereItHasOne() {
        assertEquals("on", Args.of(new String[] {"--object-reuse"}).textOr("--object-reuse", "on", "off"));
        assertEquals("both", Args.of(new String[] {"--object-reuse", "both"}).textOr("--object-reuse", "on", "off"));
        assertEquals("off", Args.of(new String[] {}).textOr("--object-reuse", "on", "off"));
    }

    @Test
    void badValuesNameTheOption() {
        final IllegalArgumentException notANumber = assertThrows(IllegalArgumentException.class,
                () -> Args.of(new String[] {"--keys", "many"}).number("--keys", 1));
        assertTrue(notANumber.getMessage().contains("--keys") && notANumber.getMessage().contains("many"),
                notANumber.getMessage());
        final IllegalArgumentException bare = assertThrows(IllegalArgumentException.class,
                () -> Args.of(new String[] {"--keys", "--quick"}).text("--keys", null));
        assertTrue(bare.getMessage().contains("--keys"), bare.getMessage());
    }
}
