package io.flix.index.gpu;

import static jcuda.driver.JCudaDriver.cuEventCreate;
import static jcuda.driver.JCudaDriver.cuEventDestroy;
import static jcuda.driver.JCudaDriver.cuEventElapsedTime;
import static jcuda.driver.JCudaDriver.cuEventRecord;
import static jcuda.driver.JCudaDriver.cuEventSynchronize;

import java.io.PrintStream;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

import jcuda.driver.CUevent;
import jcuda.driver.CUevent_flags;

/**
 * The steps of one call, timed without holding anything up (profiling, {@link io.flix.index.GpuTuning#trace()}):
 * each step records when the host passed it and an event on the index's stream, which says when the device got
 * through the work queued before it. A call's steps are printed once its last event has passed, when the next
 * call begins or the index closes: each with its host and device time since the call began, so that waits of the
 * host and the device's idle or busy stretches both show, with the copies on other streams overlapping as they
 * do untraced. Used from the thread that holds the index, its context current.
 */
final class StepTimeline implements AutoCloseable {

    private final DeviceStream stream;
    private final PrintStream out;
    private final List<CUevent> events = new ArrayList<>();
    private final List<String> steps = new ArrayList<>();
    private long[] hostNanos = new long[64];
    private int marked;

    StepTimeline(DeviceStream stream, PrintStream out) {
        this.stream = stream;
        this.out = out;
    }

    /** Prints the last call's steps, then starts a new call's. */
    void begin(String call) {
        print();
        record(call);
    }

    /** The step just issued or passed (steps before any call, as a constructor's, go under a header of their own). */
    void mark(String step) {
        if (marked == 0) {
            record("outside a call");
        }
        record(step);
    }

    private void record(String step) {
        if (marked == events.size()) {
            final CUevent e = new CUevent();
            cuEventCreate(e, CUevent_flags.CU_EVENT_DEFAULT);
            events.add(e);
        }
        if (marked == hostNanos.length) {
            hostNanos = Arrays.copyOf(hostNanos, marked * 2);
        }
        cuEventRecord(events.get(marked), stream.stream());
        hostNanos[marked] = System.nanoTime();
        if (marked < steps.size()) {
            steps.set(marked, step);
        } else {
            steps.add(step);
        }
        marked++;
    }

    /** Prints the steps marked since the call began (waiting for the device to pass the last), and forgets them. */
    void print() {
        if (marked == 0) {
            return;
        }
        cuEventSynchronize(events.get(marked - 1));
        final float[] ms = new float[1];
        out.printf("  [flix.gpu] %-40s %10s %10s%n", steps.get(0), "host ms", "device ms");
        for (int i = 1; i < marked; i++) {
            cuEventElapsedTime(ms, events.get(0), events.get(i));
            out.printf("  [flix.gpu]   %-38s %10.3f %10.3f%n", steps.get(i), (hostNanos[i] - hostNanos[0]) / 1e6,
                    ms[0]);
        }
        marked = 0;
    }

    @Override
    public void close() {
        print();
        for (CUevent e : events) {
            cuEventDestroy(e);
        }
        events.clear();
    }
}
