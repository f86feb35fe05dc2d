package org.jtorch.examples;

import java.util.List;
import org.jtorch.examples.dcgan.DcganExample;
import org.jtorch.examples.gpt.CharGpt;
import org.jtorch.examples.mnist.MnistExample;
import org.jtorch.examples.regression.RegressionExample;
import org.jtorch.examples.timeseq.TimeSequencePrediction;
import org.jtorch.examples.vae.VaeExample;
import org.jtorch.examples.wordlm.WordLanguageModel;

/** The examples {@code jtorch example} knows, in the order its help lists them. */
public final class Examples {
    private Examples() {}

    public static List<Example> all() {
        return List.of(new MnistExample(), new RegressionExample(), new VaeExample(), new TimeSequencePrediction(), new DcganExample(), new CharGpt(), new WordLanguageModel());
    }

    /** The example called {@code name}, or null. */
    public static Example find(String name) {
        for (Example e : all()) if (e.name().equals(name)) return e;
        return null;
    }
}
