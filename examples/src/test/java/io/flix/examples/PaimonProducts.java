package io.flix.examples;

import org.apache.flink.api.common.RuntimeExecutionMode;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.java.typeutils.RowTypeInfo;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.table.api.bridge.java.StreamTableEnvironment;
import org.apache.flink.types.Row;
import org.apache.flink.util.FileUtils;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * The products in a Paimon primary-key table {@code paimon.bench.products (id BIGINT, name STRING, price DOUBLE)} of
 * a filesystem catalog in a temporary directory, written by a Flink batch job.
 */
final class PaimonProducts implements AutoCloseable {

    /** The catalog's name in the jobs that declare it with {@link #catalogDdl()}. */
    static final String CATALOG = "paimon";
    /** The table's path in that catalog. */
    static final String TABLE = CATALOG + ".bench.products";

    private final Path warehouse;

    private PaimonProducts(Path warehouse) {
        this.warehouse = warehouse;
    }

    /** Writes products 1..{@code products} into a new warehouse. */
    static PaimonProducts load(long products, int parallelism) throws Exception {
        final PaimonProducts table = new PaimonProducts(Files.createTempDirectory("flix-bench-paimon"));
        try {
            final StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
            env.setParallelism(parallelism);
            env.setRuntimeMode(RuntimeExecutionMode.BATCH);
            final StreamTableEnvironment tEnv = StreamTableEnvironment.create(env);
            tEnv.executeSql(table.catalogDdl());
            tEnv.executeSql("CREATE DATABASE " + CATALOG + ".bench");
            tEnv.executeSql("CREATE TABLE " + TABLE + " (id BIGINT, name STRING, price DOUBLE, "
                    + "PRIMARY KEY (id) NOT ENFORCED)");
            tEnv.createTemporaryView("generated", tEnv.fromDataStream(env.fromSequence(1, products)
                    .map(id -> Row.of(id, SqlBenchmarkData.name(id), SqlBenchmarkData.price(id)))
                    .returns(new RowTypeInfo(Types.LONG, Types.STRING, Types.DOUBLE))));
            tEnv.executeSql("INSERT INTO " + TABLE + " SELECT * FROM generated").await();
        } catch (Exception e) {
            table.close();
            throw e;
        }
        return table;
    }

    /** The statement that declares the catalog in a job. */
    String catalogDdl() {
        return "CREATE CATALOG " + CATALOG + " WITH ('type' = 'paimon', 'warehouse' = '" + warehouse.toUri() + "')";
    }

    /** The warehouse's size on disk. */
    long bytes() throws IOException {
        return FileUtils.getDirectoryFilesSize(warehouse);
    }

    @Override
    public void close() throws IOException {
        FileUtils.deleteDirectory(warehouse.toFile());
    }
}
