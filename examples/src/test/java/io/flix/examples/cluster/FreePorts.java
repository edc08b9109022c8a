package io.flix.examples.cluster;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashSet;
import java.util.Set;
import java.util.concurrent.ThreadLocalRandom;

/**
 * Ports for the processes the harness starts, which bind them later themselves. A port the kernel hands out for
 * port 0 is in its ephemeral range, where any socket bound to port 0 meanwhile (a task manager's second actor
 * system, a Kafka client, a JMX connection) may take it, and the process that was to bind it fails to start. Ports
 * below that range are never handed out that way: they are free until someone asks for that very port.
 */
final class FreePorts {

    /** Linux's default ephemeral range, where the kernel does not say. */
    static final int[] DEFAULT_EPHEMERAL = {32768, 60999};
    private static final int LOWEST = 10000;
    private static final Set<Integer> HANDED_OUT = new HashSet<>();

    private FreePorts() {
    }

    /** A port nothing listens on now, outside the ephemeral range, not handed out before by this JVM. */
    static synchronized int next() throws IOException {
        final int[] range = outsideEphemeral(ephemeralRange());
        for (int attempt = 0; attempt < 1000; attempt++) {
            final int port = ThreadLocalRandom.current().nextInt(range[0], range[1] + 1);
            if (!HANDED_OUT.contains(port) && bindable(port)) {
                HANDED_OUT.add(port);
                return port;
            }
        }
        throw new IOException("no free port in " + range[0] + ".." + range[1] + " after 1000 tries");
    }

    /** The wider of the ranges below and above {@code ephemeral} (inclusive bounds). */
    static int[] outsideEphemeral(int[] ephemeral) {
        final int[] below = {LOWEST, ephemeral[0] - 1};
        final int[] above = {ephemeral[1] + 1, 65535};
        final int[] wider = below[1] - below[0] >= above[1] - above[0] ? below : above;
        if (wider[1] - wider[0] < 100) {
            throw new IllegalStateException("the ephemeral port range " + ephemeral[0] + "-" + ephemeral[1]
                    + " leaves no room for fixed ports");
        }
        return wider;
    }

    static int[] ephemeralRange() {
        try {
            return parseRange(Files.readString(Path.of("/proc/sys/net/ipv4/ip_local_port_range")));
        } catch (IOException | RuntimeException e) {
            return DEFAULT_EPHEMERAL;
        }
    }

    static int[] parseRange(String text) {
        final String[] bounds = text.trim().split("\\s+");
        return new int[] {Integer.parseInt(bounds[0]), Integer.parseInt(bounds[1])};
    }

    private static boolean bindable(int port) {
        try (ServerSocket socket = new ServerSocket()) {
            socket.setReuseAddress(false);
            socket.bind(new InetSocketAddress(port));
            return true;
        } catch (IOException taken) {
            return false;
        }
    }
}
