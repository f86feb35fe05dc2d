/**
 * Image transforms with torchvision's semantics, as functions from tensor to tensor ({@link
 * org.jtorch.vision.transforms.Transform}).
 *
 * <p>Datasets hand their transforms images as HWC tensors (the layout of a PIL image's numpy array),
 * marked as HWC images ({@link org.jtorch.vision.Images#asHwcImage}): jtorch's counterpart of
 * torchvision's PIL images. Every other tensor is a tensor image {@code [..., C, H, W]} (or
 * {@code [..., H, W]}), as in torchvision. So transforms compose in torchvision's order: before
 * {@link org.jtorch.vision.transforms.ToTensor}, {@code Resize}, {@code CenterCrop}, {@code RandomCrop},
 * {@code Pad} and {@code RandomHorizontalFlip} act on the HWC image's height and width as torchvision
 * does on a PIL image ({@code Resize} with Pillow's antialiased bilinear filter); {@code Normalize}
 * refuses it, as torchvision does, until {@code ToTensor} has made it a CHW float tensor. The usual
 * CIFAR-10 training pipeline is torchvision's:
 * <pre>{@code
 * new Compose(new RandomCrop(32, 4), new RandomHorizontalFlip(), new ToTensor(),
 *         new Normalize(new double[] {0.4914, 0.4822, 0.4465}, new double[] {0.2470, 0.2435, 0.2616}))
 * }</pre>
 * ({@code ToTensor} first gives the same result here: zero padding, cropping and flipping commute with
 * scaling to [0, 1]; resizing does not, as Pillow resizes bytes and the tensor path floats.)
 *
 * <p>Random transforms draw from an {@link org.jtorch.types.Generator} (the default one unless given), whose
 * draws are synchronised, so one transform may serve several DataLoader workers.
 */
package org.jtorch.vision.transforms;
