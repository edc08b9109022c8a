package io.flix.flink.taskmanager;

import io.flix.index.Backend;
import io.flix.index.FlixIndex;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.Locale;

/**
 * The backend an index got, as the {@code flixBackend} gauges show it: {@code gpu}, {@code cpu}, or, where AUTO fell
 * to the CPU although the machine shows an NVIDIA GPU, {@code cpu (GPU unavailable: <cause>)}, logged as a WARN. A
 * job that must run on the GPU sets the backend to GPU: its open then fails with the cause.
 */
public final class BackendReport {

    private static final Logger LOG = LoggerFactory.getLogger(BackendReport.class);

    private BackendReport() {
    }

    /** The gauge's text for an index opened with backend {@code asked}; logs AUTO's fall to the CPU. */
    public static String describe(FlixIndex index, Backend asked, String what) {
        return describe(index, asked == Backend.AUTO && index.backend() == Backend.CPU
                ? Backend.AUTO.fallbackReason() : null, what);
    }

    /** As {@link #describe(FlixIndex, Backend, String)}, where AUTO fell to the CPU for {@code fallbackReason}. */
    static String describe(FlixIndex index, String fallbackReason, String what) {
        final String backend = index.backend().name().toLowerCase(Locale.ROOT);
        if (fallbackReason == null || index.backend() != Backend.CPU) {
            return backend;
        }
        LOG.warn("{}: backend AUTO opened its index on the CPU although this machine shows an NVIDIA GPU: {}. "
                + "Set the backend to GPU to make the GPU required (the open then fails with this cause).",
                what, fallbackReason);
        return backend + " (" + fallbackReason + ")";
    }
}
