package org.jtorch.cli.train;

import java.nio.file.Path;
import org.jtorch.types.Device;

/**
 * Everything {@code jtorch train} was asked to do.
 *
 * @param lr the learning rate, or NaN for the optimizer's usual default
 * @param limitTrain use only the first this many training samples (0: all)
 * @param limitTest use only the first this many test samples (0: all)
 * @param dataDir where datasets are looked for, or null for the default ({@code $JTORCH_DATA}, {@code .data})
 * @param checkpoint written (atomically) after every epoch, or null
 * @param resume a checkpoint to continue from, or null
 * @param metricsJson where the final metrics go, or null
 * @param plot where the PNG of the curves goes, or null for none
 * @param amp mixed precision: {@code off}, {@code fp16} (autocast with a GradScaler) or {@code bf16} (autocast)
 * @param compile train and evaluate the model compiled by the JIT ({@code Jit.compile})
 */
public record TrainConfig(
        String model,
        String dataset,
        int epochs,
        int batchSize,
        double lr,
        String optimizer,
        double momentum,
        double weightDecay,
        String scheduler,
        Device device,
        int workers,
        boolean pinMemory,
        int limitTrain,
        int limitTest,
        long seed,
        Path dataDir,
        Path checkpoint,
        Path resume,
        Path metricsJson,
        Path plot,
        boolean fetch,
        String amp,
        boolean compile) {}
