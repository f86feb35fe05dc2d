/**
 * Image datasets as {@link org.jtorch.data.Dataset}s of {@link org.jtorch.data.Sample}s, with
 * torchvision's semantics: MNIST and Fashion-MNIST (IDX files, fetched by {@code scripts/fetch-data}),
 * CIFAR-10 (the binary batches), {@code ImageFolder} (one folder per class) and the bundled UCI
 * digits. Images come as uint8 HWC tensors (the digits as float in [0, 1]), labels as 0-d int64
 * tensors, each through the dataset's optional transform and target transform; {@code get} is
 * thread-safe and its tensors belong to the caller.
 */
package org.jtorch.vision.datasets;
