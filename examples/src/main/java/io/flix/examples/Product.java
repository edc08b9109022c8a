package io.flix.examples;

import java.math.BigDecimal;

/** A catalog entry: the dimension the orders are enriched with. A Flink POJO. */
public class Product {
    public long id;
    public String name;
    public long priceCents;
    public String category;
    /** A withdrawn product is deleted from the dimension. */
    public boolean withdrawn;

    public Product() {
    }

    public Product(long id, String name, long priceCents, String category, boolean withdrawn) {
        this.id = id;
        this.name = name;
        this.priceCents = priceCents;
        this.category = category;
        this.withdrawn = withdrawn;
    }

    @Override
    public String toString() {
        // the cents as an amount: -150 is -1.50
        return name + " " + BigDecimal.valueOf(priceCents, 2).toPlainString() + " (" + category + ")";
    }
}
