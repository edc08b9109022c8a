package io.flix.examples;

/** An order of some quantity of one product. A Flink POJO. */
public class Order {
    public long orderId;
    public long productId;
    public int quantity;

    public Order() {
    }

    public Order(long orderId, long productId, int quantity) {
        this.orderId = orderId;
        this.productId = productId;
        this.quantity = quantity;
    }

    @Override
    public String toString() {
        return "order " + orderId + ": " + quantity + " x product " + productId;
    }
}
