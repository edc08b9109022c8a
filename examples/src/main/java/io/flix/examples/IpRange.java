package io.flix.examples;

import java.util.Objects;

/**
 * A range of IPv4 addresses, {@code [first, last]}, with the country and the autonomous system (AS) it belongs to.
 * Addresses are longs from 0 ({@code 0.0.0.0}) to {@link #MAX_ADDRESS} ({@code 255.255.255.255}). As an update of
 * the range table, a range replaces the one that starts at the same address, and a {@link #withdrawn} one deletes
 * it. A Flink POJO.
 */
public class IpRange {

    /** {@code 255.255.255.255}. */
    public static final long MAX_ADDRESS = 0xFFFF_FFFFL;

    public long first;
    public long last;
    public String country;
    public long asn;
    /** An update that deletes the range starting at {@link #first}. */
    public boolean withdrawn;

    public IpRange() {
    }

    public IpRange(long first, long last, String country, long asn) {
        this.first = first;
        this.last = last;
        this.country = country;
        this.asn = asn;
    }

    /** The update that deletes the range starting at {@code first}. */
    public static IpRange withdrawal(long first) {
        final IpRange update = new IpRange(first, first, null, 0);
        update.withdrawn = true;
        return update;
    }

    /** This range, where its bounds are IPv4 addresses in order; else an IllegalArgumentException naming them. */
    public IpRange checked() {
        if (first < 0 || last > MAX_ADDRESS || first > last) {
            throw new IllegalArgumentException("[" + first + ", " + last + "] is not a range of IPv4 addresses "
                    + "(0 <= first <= last <= " + MAX_ADDRESS + ")");
        }
        return this;
    }

    /** The address of dotted-quad text such as {@code 192.0.2.1}; an IllegalArgumentException naming other text. */
    public static long parseAddress(String dotted) {
        final String[] parts = dotted == null ? new String[0] : dotted.split("\\.", -1);
        if (parts.length != 4) {
            throw new IllegalArgumentException("'" + dotted + "' is not an IPv4 address (four numbers 0-255 joined "
                    + "by dots)");
        }
        long address = 0;
        for (String part : parts) {
            if (part.isEmpty() || part.length() > 3 || !part.chars().allMatch(c -> c >= '0' && c <= '9')
                    || Integer.parseInt(part) > 255) {
                throw new IllegalArgumentException("'" + dotted + "' is not an IPv4 address: '" + part
                        + "' is not a number 0-255");
            }
            address = address << 8 | Integer.parseInt(part);
        }
        return address;
    }

    /** The dotted-quad text of an address; an IllegalArgumentException naming a long that is none. */
    public static String formatAddress(long address) {
        if (address < 0 || address > MAX_ADDRESS) {
            throw new IllegalArgumentException(address + " is not an IPv4 address (0 to " + MAX_ADDRESS + ")");
        }
        return (address >>> 24) + "." + (address >>> 16 & 0xFF) + "." + (address >>> 8 & 0xFF) + "." + (address & 0xFF);
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof IpRange r && first == r.first && last == r.last && Objects.equals(country, r.country)
                && asn == r.asn && withdrawn == r.withdrawn;
    }

    @Override
    public int hashCode() {
        return Objects.hash(first, last, country, asn, withdrawn);
    }

    @Override
    public String toString() {
        final String bounds = first >= 0 && last <= MAX_ADDRESS
                ? formatAddress(first) + " - " + formatAddress(last) : first + " - " + last;
        return withdrawn ? "withdraw " + bounds : country + " AS" + asn + " [" + bounds + "]";
    }
}
