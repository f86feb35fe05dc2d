package org.jtorch.examples;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;

/**
 * The text of the language-model examples. No corpus such as tiny-shakespeare or Wikitext-2 can be had
 * here, so by default they read the GNU GPL version 3 (35 kB of English) that every Debian system has in
 * {@code /usr/share/common-licenses/GPL-3} (package {@code base-files}, which is essential); any other
 * UTF-8 file can be given instead.
 */
public final class TextData {
    public static final Path DEFAULT = Path.of("/usr/share/common-licenses/GPL-3");

    private TextData() {}

    /** The text of {@code file}, or of {@link #DEFAULT} when it is null. */
    public static String read(Path file) throws IOException {
        Path p = file == null ? DEFAULT : file;
        if (!Files.isRegularFile(p)) {
            throw new NoSuchFileException(p + (file == null ? " (Debian's base-files package) is missing; give a text file with --text FILE" : ""));
        }
        return Files.readString(p, StandardCharsets.UTF_8);
    }
}
