/**
 * Image transforms with torchvision's semantics, as functions from tensor to tensor ({@link
 * org.jtorch.vision.transforms.Transform}).
 *
 * <p>Datasets return images as uint8 HWC tensors (the layout of a PIL image's numpy array);
 * {@link org.jtorch.vision.transforms.ToTensor} turns them into CHW floats in [0, 1]. Every other
 * transform works on tensor images {@code [..., C, H, W]} (or {@code [..., H, W]}), as torchvision's
 * transforms on tensors do, so put {@code ToTensor} first: a spatial transform applied to an HWC tensor
 * would treat the width and channels as the image's height and width. The usual CIFAR-10 training
 * pipeline is
 * <pre>{@code
 * new Compose(new ToTensor(), new RandomCrop(32, 4), new RandomHorizontalFlip(),
 *         new Normalize(new double[] {0.4914, 0.4822, 0.4465}, new double[] {0.2470, 0.2435, 0.2616}))
 * }</pre>
 * the equivalent of torchvision's {@code [RandomCrop(32, 4), RandomHorizontalFlip(), ToTensor(),
 * Normalize(...)]} on PIL images: zero padding, cropping and flipping commute with scaling to [0, 1].
 *
 * <p>Random transforms draw from an {@link org.jtorch.Generator} (the default one unless given), whose
 * draws are synchronised, so one transform may serve several DataLoader workers.
 */
package org.jtorch.vision.transforms;
