package io.flix.examples;

import java.time.LocalDateTime;
import java.util.SplittableRandom;

/**
 * The SQL benchmark's data, defined once for every loader (Kafka, PostgreSQL, Paimon) and for the check of the
 * joined rows: products 1..n, each listed at {@link #LISTED}; orders 1..m after it, each for a product drawn from
 * the order's id, so that the right answer of every joined row is known from the row alone.
 */
final class SqlBenchmarkData {

    /** When every product was listed: before every order, so that every order has its product. */
    static final LocalDateTime LISTED = LocalDateTime.of(2026, 1, 1, 0, 0);

    private SqlBenchmarkData() {
    }

    static String name(long productId) {
        return "product-" + productId;
    }

    static double price(long productId) {
        return (productId % 10_000) / 100.0;
    }

    /** The product of an order: uniform over 1..products, the same for the same order id. */
    static long productOf(long orderId, long products) {
        return new SplittableRandom(orderId).nextLong(1, products + 1);
    }

    /** How many of its product an order takes: 1..9. */
    static int quantityOf(long orderId) {
        return new SplittableRandom(~orderId).nextInt(1, 10);
    }

    /** An order's event time: one millisecond apart, from a second after the listing. */
    static LocalDateTime orderTime(long orderId) {
        return LISTED.plusSeconds(1).plusNanos(orderId * 1_000_000L);
    }
}
