package io.flix.flink.table;

import java.io.FilterOutputStream;
import java.io.IOException;
import java.io.OutputStream;

/** Passes on the first {@code limit} bytes, then fails: a stream as a task manager that dies mid-write leaves it. */
final class DyingOutputStream extends FilterOutputStream {

    private long left;

    DyingOutputStream(OutputStream out, long limit) {
        super(out);
        this.left = limit;
    }

    @Override
    public void write(byte[] b, int off, int len) throws IOException {
        final int passed = (int) Math.min(len, left);
        out.write(b, off, passed);
        left -= passed;
        if (passed < len) {
            out.flush();
            throw new IOException("the task manager died mid-write (simulated)");
        }
    }

    @Override
    public void write(int b) throws IOException {
        write(new byte[] {(byte) b}, 0, 1);
    }
}
