package io.flix.flink.table.changelog;

import io.flix.flink.dimension.SerializedUpdates;
import io.flix.flink.table.spec.DimensionSpec;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;

/** The file changelog: every line of the file, in order, read once; blank lines are skipped. */
public final class FileChangelogReader extends ChangelogReader {

    /** Lines read so far, for {@link #progress()}. */
    private volatile long linesRead;

    public FileChangelogReader(DimensionSpec spec, ChangelogTarget dimension) {
        super(spec, dimension);
    }

    @Override
    void read(ChangelogDecoder decoder) throws Exception {
        final Path path = Path.of(spec.filePath());
        SerializedUpdates batch = new SerializedUpdates(256);
        // the file is the bootstrap: its batches are applied while the next lines are read and decoded
        try (BufferedReader lines = new BufferedReader(
                new InputStreamReader(Files.newInputStream(path), StandardCharsets.UTF_8), 1 << 16);
             BackgroundApply background = new BackgroundApply(dimension, "flix-changelog-apply " + path)) {
            String line;
            long lineNumber = 0;
            while (running && (line = lines.readLine()) != null) {
                linesRead = ++lineNumber;
                if (line.isBlank()) {
                    continue;
                }
                decoder.addFileLine(lineNumber, line.getBytes(StandardCharsets.UTF_8), batch);
                if (full(batch)) {
                    batch = background.hand(batch, Map.of());
                }
            }
            background.hand(batch, Map.of());
            background.await();
        }
        dimension.bootstrapApplied();
    }

    @Override
    public long recordsRead() {
        return linesRead;
    }

    @Override
    public Progress progress() {
        return new Progress(linesRead + " lines of the file read", null);
    }
}
