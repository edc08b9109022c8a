package io.flix.flink;

import java.util.Objects;

/** A test payload POJO; {@link #stock} is the field a later version of the job added. */
public class Product {
    public long id;
    public String name;
    public int stock;

    public Product() {
    }

    public Product(long id, String name, int stock) {
        this.id = id;
        this.name = name;
        this.stock = stock;
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof Product p && id == p.id && Objects.equals(name, p.name) && stock == p.stock;
    }

    @Override
    public int hashCode() {
        return Objects.hash(id, name, stock);
    }

    @Override
    public String toString() {
        return "Product{" + id + ", " + name + ", " + stock + '}';
    }
}
