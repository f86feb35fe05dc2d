package org.jtorch.vision.datasets;

import org.jtorch.Tensor;

/**
 * One supervised sample: the (transformed) image and its (transformed) target, by default a 0-d
 * int64 class index. The receiver owns both tensors.
 */
public record Sample(Tensor input, Tensor target) {}
