package jquant.formats;

import java.io.IOException;
import java.nio.file.Path;

/** A checkpoint or data file that cannot be read as what it claims to be. The message names the file. */
public class CheckpointException extends IOException {
    public CheckpointException(Path file, String problem) {
        super(file + ": " + problem);
    }

    public CheckpointException(Path file, String problem, Throwable cause) {
        super(file + ": " + problem, cause);
    }
}
