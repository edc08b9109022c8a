package io.flix.flink.table;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;

/** The file changelog: every line of the file, in order, read once; blank lines are skipped. */
final class FileChangelogReader extends ChangelogReader {

    FileChangelogReader(DimensionSpec spec, SharedDimension dimension) {
        super(spec, dimension);
    }

    @Override
    void read(ChangelogDecoder decoder) throws Exception {
        final Path path = Path.of(spec.filePath());
        UpdateBatch batch = new UpdateBatch();
        try (BufferedReader lines = new BufferedReader(
                new InputStreamReader(Files.newInputStream(path), StandardCharsets.UTF_8), 1 << 16)) {
            String line;
            while (running && (line = lines.readLine()) != null) {
                if (line.isBlank()) {
                    continue;
                }
                decoder.addFileLine(line.getBytes(StandardCharsets.UTF_8), batch);
                if (batch.size() >= spec.changelogBatchSize()) {
                    dimension.submit(batch);
                    batch = new UpdateBatch();
                }
            }
        }
        dimension.submit(batch);
        dimension.bootstrapSubmitted();
    }
}
