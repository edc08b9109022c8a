package io.flix.examples;

/** A connection from an IPv4 address (a long, 0 to {@link IpRange#MAX_ADDRESS}): the event to locate. A Flink POJO. */
public class Connection {
    public long id;
    public long address;

    public Connection() {
    }

    public Connection(long id, long address) {
        this.id = id;
        this.address = address;
    }

    @Override
    public String toString() {
        return "connection " + id + " from "
                + (address >= 0 && address <= IpRange.MAX_ADDRESS ? IpRange.formatAddress(address) : address);
    }
}
