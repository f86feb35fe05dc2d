/**
 * The model zoo, with torchvision's module trees and state-dict keys so that weights move between
 * PyTorch and jtorch through safetensors: {@link org.jtorch.vision.models.LeNet5}, the CIFAR ResNets of
 * He et al. ({@link org.jtorch.vision.models.CifarResNet}: 20, 32, 56 layers, option A shortcuts) and
 * torchvision's ResNet-18/34/50 ({@link org.jtorch.vision.models.ResNet}); {@link
 * org.jtorch.vision.models.Models#create} builds one by name.
 */
package org.jtorch.vision.models;
