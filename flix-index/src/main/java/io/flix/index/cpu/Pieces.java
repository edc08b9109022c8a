package io.flix.index.cpu;

import java.util.concurrent.ForkJoinPool;
import java.util.concurrent.RecursiveAction;
import java.util.function.IntConsumer;

/** Runs numbered pieces of work {@code 0..pieces-1} on a pool, split in halves so that idle workers steal. */
final class Pieces extends RecursiveAction {

    private final int from;
    private final int to;
    private final IntConsumer body;

    private Pieces(int from, int to, IntConsumer body) {
        this.from = from;
        this.to = to;
        this.body = body;
    }

    /** Runs {@code body(p)} for every piece; on the calling thread when there is only one. */
    static void run(ForkJoinPool pool, int pieces, IntConsumer body) {
        if (pieces == 1) {
            body.accept(0);
        } else if (pieces > 1) {
            pool.invoke(new Pieces(0, pieces, body));
        }
    }

    @Override
    protected void compute() {
        if (to - from == 1) {
            body.accept(from);
            return;
        }
        final int mid = (from + to) >>> 1;
        invokeAll(new Pieces(from, mid, body), new Pieces(mid, to, body));
    }
}
