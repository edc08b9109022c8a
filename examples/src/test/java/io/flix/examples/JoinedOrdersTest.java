package io.flix.examples;

import org.apache.flink.types.Row;
import org.junit.jupiter.api.Test;

import java.util.concurrent.atomic.AtomicInteger;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The SQL benchmark's check of joined rows: what it takes as right, what it counts as wrong. */
class JoinedOrdersTest {

    private static final long PRODUCTS = 100;

    @Test
    void rightRowsPassAndTheFootprintIsMeasuredOnceAtHalf() throws Exception {
        final AtomicInteger measured = new AtomicInteger();
        JoinedOrders.reset(4, PRODUCTS, () -> {
            measured.incrementAndGet();
            return new JoinedOrders.Footprint(1, 2);
        });
        for (long order = 1; order <= 4; order++) {
            JoinedOrders.accept(joined(order, SqlBenchmarkData.productOf(order, PRODUCTS)));
            assertEquals(order >= 2 ? 1 : 0, measured.get(), "after order " + order);
        }
        assertEquals(4, JoinedOrders.rows());
        assertEquals(0, JoinedOrders.wrong(), JoinedOrders.firstWrong());
        assertEquals(new JoinedOrders.Footprint(1, 2), JoinedOrders.footprint());
        assertTrue(JoinedOrders.firstRowNanos() != 0);
    }

    @Test
    void anotherProductsRowIsWrong() throws Exception {
        JoinedOrders.reset(4, PRODUCTS, () -> null);
        final long product = SqlBenchmarkData.productOf(1, PRODUCTS);
        final Row row = joined(1, product);
        row.setField(3, product % PRODUCTS + 1);
        row.setField(4, SqlBenchmarkData.name(product % PRODUCTS + 1));
        JoinedOrders.accept(row);
        assertEquals(1, JoinedOrders.wrong());
        assertNotNull(JoinedOrders.firstWrong());
    }

    @Test
    void aWrongAmountIsWrong() throws Exception {
        JoinedOrders.reset(4, PRODUCTS, () -> null);
        final Row row = joined(1, SqlBenchmarkData.productOf(1, PRODUCTS));
        row.setField(6, (Double) row.getField(6) + 1);
        JoinedOrders.accept(row);
        assertEquals(1, JoinedOrders.wrong());
    }

    @Test
    void anOrderTwiceIsWrong() throws Exception {
        JoinedOrders.reset(4, PRODUCTS, () -> null);
        final Row row = joined(3, SqlBenchmarkData.productOf(3, PRODUCTS));
        JoinedOrders.accept(row);
        assertNull(JoinedOrders.firstWrong());
        JoinedOrders.accept(row);
        assertEquals(1, JoinedOrders.wrong());
        assertTrue(JoinedOrders.firstWrong().contains("twice"), JoinedOrders.firstWrong());
    }

    @Test
    void anOrderOfTheOrdersAloneIsCheckedForItsOwnProduct() throws Exception {
        JoinedOrders.reset(4, PRODUCTS, () -> null);
        JoinedOrders.accept(Row.of(2L, SqlBenchmarkData.productOf(2, PRODUCTS), SqlBenchmarkData.quantityOf(2)));
        assertEquals(0, JoinedOrders.wrong(), JoinedOrders.firstWrong());
        JoinedOrders.accept(Row.of(4L, SqlBenchmarkData.productOf(4, PRODUCTS) % PRODUCTS + 1,
                SqlBenchmarkData.quantityOf(4)));
        assertEquals(1, JoinedOrders.wrong());
    }

    /** The row a right join gives for the order, joined with {@code product}'s row. */
    private static Row joined(long order, long product) {
        final int quantity = SqlBenchmarkData.quantityOf(order);
        final double price = SqlBenchmarkData.price(product);
        return Row.of(order, SqlBenchmarkData.productOf(order, PRODUCTS), quantity, product,
                SqlBenchmarkData.name(product), price, price * quantity);
    }
}
