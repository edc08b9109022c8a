package io.flix.examples;

import org.apache.flink.types.Row;

import java.util.BitSet;
import java.util.Objects;
import java.util.concurrent.Callable;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

/**
 * What the SQL benchmark's sinks see of one job (static: the job runs in this JVM's mini cluster, its functions are
 * copies): every row is counted and checked against {@link SqlBenchmarkData}, the first row's time is kept, and
 * once, when half the orders have come out, the sinks are held while a footprint is measured, so that the
 * measurement sees every operator open and loaded and its pause can be taken out of the job's time.
 *
 * <p>A joined row is {@code (order_id, product_id, quantity, id, name, price, amount)}: it is right where the
 * order's product and quantity are its own, the product row is that product's and the amount is price * quantity.
 * A row of the orders alone is {@code (order_id, product_id, quantity)}. Every order must come out exactly once.
 */
final class JoinedOrders {

    /** What was measured at half the orders. */
    record Footprint(long liveHeapBytes, long localDiskBytes) {
    }

    private static final Object LOCK = new Object();
    private static final AtomicLong ROWS = new AtomicLong();
    private static final AtomicLong WRONG = new AtomicLong();
    private static final AtomicLong FIRST_ROW_NANOS = new AtomicLong();
    private static final AtomicReference<String> FIRST_WRONG = new AtomicReference<>();
    private static BitSet seen = new BitSet();
    private static volatile boolean holding;
    private static volatile long orders;
    private static volatile long products;
    private static volatile Callable<Footprint> measure;
    private static volatile Footprint footprint;
    private static volatile long heldNanos;

    private JoinedOrders() {
    }

    /** Clears the counts for a job over {@code orders} orders of {@code products} products. */
    static void reset(long orders, long products, Callable<Footprint> measureAtHalf) {
        synchronized (LOCK) {
            ROWS.set(0);
            WRONG.set(0);
            FIRST_ROW_NANOS.set(0);
            FIRST_WRONG.set(null);
            seen = new BitSet();
            holding = false;
            JoinedOrders.orders = orders;
            JoinedOrders.products = products;
            measure = measureAtHalf;
            footprint = null;
            heldNanos = 0;
        }
    }

    /** A sink's filter: checks and counts the row, and passes nothing on. */
    static boolean accept(Row row) throws Exception {
        if (holding) {
            synchronized (LOCK) {
                while (holding) {
                    LOCK.wait();
                }
            }
        }
        FIRST_ROW_NANOS.compareAndSet(0, System.nanoTime());
        check(row);
        if (ROWS.incrementAndGet() == orders / 2) {
            measureHeld();
        }
        return false;
    }

    private static void check(Row row) {
        final long orderId = (Long) row.getField(0);
        final String wrong = wrong(row, orderId);
        final boolean repeated;
        synchronized (LOCK) {
            repeated = orderId >= 1 && orderId <= orders && seen.get((int) orderId);
            if (orderId >= 1 && orderId <= orders) {
                seen.set((int) orderId);
            }
        }
        if (wrong != null || repeated) {
            WRONG.incrementAndGet();
            FIRST_WRONG.compareAndSet(null, (repeated ? "order " + orderId + " came out twice" : wrong) + ": " + row);
        }
    }

    private static String wrong(Row row, long orderId) {
        if (orderId < 1 || orderId > orders) {
            return "no such order";
        }
        final long productId = SqlBenchmarkData.productOf(orderId, products);
        final int quantity = SqlBenchmarkData.quantityOf(orderId);
        if (!Objects.equals(row.getField(1), productId) || !Objects.equals(row.getField(2), quantity)) {
            return "the order's product or quantity is not its own (product " + productId + ", quantity "
                    + quantity + ")";
        }
        if (row.getArity() == 3) {
            return null;
        }
        final double price = SqlBenchmarkData.price(productId);
        if (!Objects.equals(row.getField(3), productId)
                || !Objects.equals(row.getField(4), SqlBenchmarkData.name(productId))
                || !Objects.equals(row.getField(5), price)
                || !Objects.equals(row.getField(6), price * quantity)) {
            return "not product " + productId + "'s row (" + SqlBenchmarkData.name(productId) + ", " + price
                    + ", amount " + price * quantity + ")";
        }
        return null;
    }

    private static void measureHeld() throws Exception {
        holding = true;
        final long start = System.nanoTime();
        try {
            footprint = measure.call();
        } finally {
            heldNanos = System.nanoTime() - start;
            synchronized (LOCK) {
                holding = false;
                LOCK.notifyAll();
            }
        }
    }

    static long rows() {
        return ROWS.get();
    }

    static long wrong() {
        return WRONG.get();
    }

    /** The first wrong row and what is wrong with it; null where none was. */
    static String firstWrong() {
        return FIRST_WRONG.get();
    }

    /** {@link System#nanoTime()} of the first row; 0 where none came. */
    static long firstRowNanos() {
        return FIRST_ROW_NANOS.get();
    }

    /** The footprint measured at half the orders; null where fewer came out. */
    static Footprint footprint() {
        return footprint;
    }

    /** How long the sinks were held for the measurement. */
    static long heldNanos() {
        return heldNanos;
    }
}
