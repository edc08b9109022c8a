package io.flix.examples;

/** A connection and the range its address lies in: {@code range} is null where it lies in none. A Flink POJO. */
public class Located {
    public Connection connection;
    public IpRange range;

    public Located() {
    }

    public Located(Connection connection, IpRange range) {
        this.connection = connection;
        this.range = range;
    }

    @Override
    public String toString() {
        return connection + " -> " + (range == null ? "unknown" : range);
    }
}
