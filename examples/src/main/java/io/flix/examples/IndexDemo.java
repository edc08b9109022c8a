package io.flix.examples;

import io.flix.index.Backend;
import io.flix.index.FlixConfig;
import io.flix.index.FlixIndex;

import java.util.Locale;
import java.util.SplittableRandom;

/**
 * The embedded demo: a product dimension of one million keys in a FliX index (the GPU when one is present, else
 * the CPU), kept current by batches of price updates and deletions while batches of orders are enriched with
 * their product's price. No Kafka, no Flink cluster. The last line reads
 * {@code enriched=<count> throughput=<events/s> backend=<cpu|gpu>}.
 */
public final class IndexDemo {

    private static final int PRODUCTS = 1_000_000;
    private static final int ORDERS = 20_000_000;
    private static final int ORDER_BATCH = 1 << 16;
    private static final int UPDATE_BATCH = 1 << 12;

    private IndexDemo() {
    }

    public static void main(String[] args) {
        final SplittableRandom random = new SplittableRandom(7);
        try (FlixIndex products = FlixIndex.open(FlixConfig.builder().backend(Backend.AUTO).build())) {
            final long[] ids = new long[PRODUCTS];
            final long[] prices = new long[PRODUCTS];
            for (int i = 0; i < PRODUCTS; i++) {
                ids[i] = productId(i);
                prices[i] = 100 + random.nextInt(100_000); // cents
            }
            final long loadStart = System.nanoTime();
            products.build(ids, prices, PRODUCTS);
            System.out.printf(Locale.ROOT, "loaded %d products in %.1f ms on the %s backend%n",
                    products.size(), (System.nanoTime() - loadStart) / 1e6, backendName(products));

            final long[] orderProducts = new long[ORDER_BATCH];
            final long[] orderPrices = new long[ORDER_BATCH];
            final long[] updateIds = new long[UPDATE_BATCH];
            final long[] updatePrices = new long[UPDATE_BATCH];
            final long[] deleteIds = new long[UPDATE_BATCH / 8];
            long enriched = 0;
            long unmatched = 0;
            final long start = System.nanoTime();
            for (int done = 0; done < ORDERS; done += ORDER_BATCH) {
                // the dimension moves: new prices for some products, some products withdrawn, new ones listed
                for (int i = 0; i < UPDATE_BATCH; i++) {
                    updateIds[i] = productId(random.nextInt(PRODUCTS + PRODUCTS / 10));
                    updatePrices[i] = 100 + random.nextInt(100_000);
                }
                for (int i = 0; i < deleteIds.length; i++) {
                    deleteIds[i] = productId(random.nextInt(PRODUCTS));
                }
                products.upsert(updateIds, updatePrices, UPDATE_BATCH);
                products.delete(deleteIds, deleteIds.length);

                // orders name products, a few of them unknown
                final int n = Math.min(ORDER_BATCH, ORDERS - done);
                for (int i = 0; i < n; i++) {
                    orderProducts[i] = productId(random.nextInt(PRODUCTS + PRODUCTS / 20));
                }
                products.get(orderProducts, n, orderPrices);
                for (int i = 0; i < n; i++) {
                    if (orderPrices[i] == FlixIndex.NOT_FOUND) {
                        unmatched++;
                    } else {
                        enriched++;
                    }
                }
                if (done == 0) {
                    for (int i = 0; i < 5; i++) {
                        System.out.println(orderPrices[i] == FlixIndex.NOT_FOUND
                                ? "order " + (i + 1) + " product=" + orderProducts[i] + " price=<unknown product>"
                                : String.format(Locale.ROOT, "order %d product=%d price=%d.%02d", i + 1,
                                        orderProducts[i], orderPrices[i] / 100, orderPrices[i] % 100));
                    }
                }
            }
            final double seconds = (System.nanoTime() - start) / 1e9;
            System.out.printf(Locale.ROOT, "orders=%d unmatched=%d products=%d%n", ORDERS, unmatched,
                    products.size());
            System.out.printf(Locale.ROOT, "enriched=%d throughput=%.0f backend=%s%n", enriched,
                    ORDERS / seconds, backendName(products));
        }
    }

    /** Product ids are spread over the key space, as hashed ids are. */
    private static long productId(int ordinal) {
        return ordinal * 0x9E3779B97F4A7C15L;
    }

    private static String backendName(FlixIndex index) {
        return index.backend().name().toLowerCase(Locale.ROOT);
    }
}
