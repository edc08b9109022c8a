package io.flix.examples;

import org.junit.jupiter.api.Test;

import static io.flix.examples.IpRange.MAX_ADDRESS;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** IPv4 addresses as text and as longs, and which ranges are ranges. */
class IpRangeTest {

    @Test
    void addressesAtTheEndsAndBetweenReadAndPrintTheSame() {
        assertEquals(0L, IpRange.parseAddress("0.0.0.0"));
        assertEquals(MAX_ADDRESS, IpRange.parseAddress("255.255.255.255"));
        assertEquals(0xC000_0201L, IpRange.parseAddress("192.0.2.1"));
        assertEquals(256L, IpRange.parseAddress("0.0.1.0"));
        for (long address : new long[]{0, 1, 255, 256, 0x7FFF_FFFFL, 0x8000_0000L, 0xC000_0201L, MAX_ADDRESS}) {
            assertEquals(address, IpRange.parseAddress(IpRange.formatAddress(address)));
        }
        assertEquals("192.0.2.1", IpRange.formatAddress(0xC000_0201L));
    }

    @Test
    void textThatIsNoAddressIsRefusedNamingIt() {
        for (String text : new String[]{"", "1.2.3", "1.2.3.4.5", "256.0.0.0", "1.2.3.-4", "1.2..4", "a.b.c.d",
                "1.2.3.4 ", "+1.2.3.4", "0001.2.3.4"}) {
            final IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> IpRange.parseAddress(text), text);
            assertTrue(e.getMessage().startsWith("'" + text + "' is not an IPv4 address"), e.getMessage());
        }
        assertThrows(IllegalArgumentException.class, () -> IpRange.parseAddress(null));
        assertEquals("4294967296 is not an IPv4 address (0 to 4294967295)",
                assertThrows(IllegalArgumentException.class, () -> IpRange.formatAddress(MAX_ADDRESS + 1))
                        .getMessage());
        assertThrows(IllegalArgumentException.class, () -> IpRange.formatAddress(-1));
    }

    @Test
    void aRangeIsOneWhoseBoundsAreAddressesInOrder() {
        final IpRange whole = new IpRange(0, MAX_ADDRESS, "ZZ", 1);
        assertSame(whole, whole.checked());
        final IpRange single = new IpRange(MAX_ADDRESS, MAX_ADDRESS, "ZZ", 1);
        assertSame(single, single.checked());
        assertEquals("[5, 4] is not a range of IPv4 addresses (0 <= first <= last <= 4294967295)",
                assertThrows(IllegalArgumentException.class, () -> new IpRange(5, 4, "ZZ", 1).checked())
                        .getMessage());
        assertThrows(IllegalArgumentException.class, () -> new IpRange(-1, 4, "ZZ", 1).checked());
        assertThrows(IllegalArgumentException.class, () -> new IpRange(0, MAX_ADDRESS + 1, "ZZ", 1).checked());
        assertEquals("ZZ AS1 [0.0.0.0 - 255.255.255.255]", whole.toString());
        assertEquals("withdraw 0.0.0.7 - 0.0.0.7", IpRange.withdrawal(7).toString());
    }
}
