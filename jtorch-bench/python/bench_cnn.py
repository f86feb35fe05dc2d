"""PyTorch side of `jtorch bench cnn`: ResNet-20 (CIFAR, option A shortcuts) and LeNet-5 training steps."""
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

from timing import median


class Block(nn.Module):
    """He et al. 2015 basic block. Option A (the CIFAR ResNets): the shortcut subsamples and zero-pads channels;
    option B (torchvision's ResNet-18): a strided 1x1 convolution and batch norm where the shape changes."""

    def __init__(self, cin, cout, stride, option="A"):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.pad = cout - cin
        self.stride = stride
        self.downsample = None
        if option == "B" and (stride != 1 or cin != cout):
            self.downsample = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        sc = x
        if self.downsample is not None:
            sc = self.downsample(x)
        elif self.stride != 1 or self.pad:
            sc = F.pad(x[:, :, ::2, ::2], (0, 0, 0, 0, self.pad // 2, self.pad // 2))
        return F.relu(out + sc)


class ResNet20(nn.Module):
    def __init__(self, classes=10):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 16, 3, 1, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(16)
        layers, cin = [], 16
        for cout, stride in ((16, 1), (32, 2), (64, 2)):
            for i in range(3):
                layers.append(Block(cin, cout, stride if i == 0 else 1))
                cin = cout
        self.layers = nn.Sequential(*layers)
        self.fc = nn.Linear(64, classes)

    def forward(self, x):
        x = F.relu(self.bn1(self.conv1(x)))
        x = self.layers(x)
        return self.fc(F.adaptive_avg_pool2d(x, 1).flatten(1))


class ResNet18(nn.Module):
    """torchvision.models.resnet18 (basic blocks [2, 2, 2, 2], option B), written out: torchvision is not installed."""

    def __init__(self, classes=10):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 64, 7, 2, 3, bias=False)
        self.bn1 = nn.BatchNorm2d(64)
        self.maxpool = nn.MaxPool2d(3, 2, 1)
        layers, cin = [], 64
        for cout, stride in ((64, 1), (128, 2), (256, 2), (512, 2)):
            layers += [Block(cin, cout, stride, "B"), Block(cout, cout, 1, "B")]
            cin = cout
        self.layers = nn.Sequential(*layers)
        self.fc = nn.Linear(512, classes)
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")

    def forward(self, x):
        x = self.maxpool(F.relu(self.bn1(self.conv1(x))))
        x = self.layers(x)
        return self.fc(F.adaptive_avg_pool2d(x, 1).flatten(1))


class LeNet5(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 6, 5, padding=2)
        self.conv2 = nn.Conv2d(6, 16, 5)
        self.fc1 = nn.Linear(400, 120)
        self.fc2 = nn.Linear(120, 84)
        self.fc3 = nn.Linear(84, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        x = x.flatten(1)
        return self.fc3(F.relu(self.fc2(F.relu(self.fc1(x)))))


def training_step(model, batch, shape):
    """One step on a random batch: cross entropy, SGD with momentum and weight decay (also bench_examples.py's)."""
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, weight_decay=5e-4)
    x, y = torch.randn(batch, *shape), torch.randint(0, 10, (batch,))

    def step():
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
    return step


def step_time(model, batch, shape, quick, warmup, reps):
    torch.manual_seed(0)
    return median(training_step(model, batch, shape), warmup, reps)


def main():
    quick = "--quick" in sys.argv
    torch.set_num_threads(2)
    r20 = step_time(ResNet20(), 128, (3, 32, 32), quick, 3 if quick else 5, 5 if quick else 15)
    lenet = step_time(LeNet5(), 64, (1, 28, 28), quick, 20 if quick else 50, 50 if quick else 200)
    print(f"resnet20_step_ms {r20 * 1e3:.4f}")
    print(f"resnet20_images_per_s {128 / r20:.4f}")
    print(f"lenet_step_ms {lenet * 1e3:.4f}")
    print(f"lenet_images_per_s {64 / lenet:.4f}")


if __name__ == "__main__":
    main()
