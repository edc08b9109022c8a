package io.flix.examples.cluster;

import org.junit.jupiter.api.Test;

import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.util.HashSet;
import java.util.Set;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class FreePortsTest {

    @Test
    void portsAreOutsideTheEphemeralRangeDistinctAndBindable() throws Exception {
        final int[] ephemeral = FreePorts.ephemeralRange();
        final Set<Integer> seen = new HashSet<>();
        for (int i = 0; i < 50; i++) {
            final int port = FreePorts.next();
            assertTrue(port < ephemeral[0] || port > ephemeral[1], port + " is in the ephemeral range");
            assertTrue(seen.add(port), port + " handed out twice");
        }
        final int port = FreePorts.next();
        assertDoesNotThrow(() -> {
            try (ServerSocket socket = new ServerSocket()) {
                socket.bind(new InetSocketAddress(port));
            }
        });
    }

    @Test
    void theWiderSideOfTheEphemeralRangeIsUsed() {
        assertArrayEquals(new int[] {10000, 32767}, FreePorts.outsideEphemeral(new int[] {32768, 60999}));
        assertArrayEquals(new int[] {20001, 65535}, FreePorts.outsideEphemeral(new int[] {10500, 20000}));
        assertThrows(IllegalStateException.class, () -> FreePorts.outsideEphemeral(new int[] {1024, 65500}));
        assertArrayEquals(new int[] {32768, 60999}, FreePorts.parseRange("32768\t60999\n"));
    }
}
