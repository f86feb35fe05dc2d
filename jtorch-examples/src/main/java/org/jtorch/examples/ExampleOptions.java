package org.jtorch.examples;

import java.nio.file.Path;

/**
 * The options every example takes. Null numbers mean the original program's default. {@code steps}
 * caps the number of optimizer steps over the whole run; {@code quick} shrinks the data and the run
 * to seconds (each example says how).
 *
 * @param dataset an image example's data: {@code mnist}, {@code fashion-mnist}, {@code digits} (bundled,
 *                upsampled), or null for the example's default
 * @param model  an example's model variant (word_language_model: LSTM or Transformer), or null for its default
 * @param text   a language-model example's text file, or null for {@link TextData#DEFAULT}
 * @param outDir where images and other outputs are written
 */
public record ExampleOptions(Integer epochs, Integer steps, Integer batchSize, Double lr, boolean quick, long seed,
                             String dataset, String model, Path text, Path outDir) {
    public static ExampleOptions defaults() {
        return new ExampleOptions(null, null, null, null, false, 1, null, null, null, Path.of("."));
    }

    public int epochs(int byDefault) {
        return epochs == null ? byDefault : epochs;
    }

    public int batchSize(int byDefault) {
        return batchSize == null ? byDefault : batchSize;
    }

    public double lr(double byDefault) {
        return lr == null ? byDefault : lr;
    }

    /** The step cap, or {@link Integer#MAX_VALUE} when there is none. */
    public int maxSteps() {
        return steps == null ? Integer.MAX_VALUE : steps;
    }

    public String dataset(String byDefault) {
        return dataset == null ? byDefault : dataset;
    }
}
