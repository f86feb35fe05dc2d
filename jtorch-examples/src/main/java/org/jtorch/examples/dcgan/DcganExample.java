package org.jtorch.examples.dcgan;

import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Locale;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.autograd.Grad;
import org.jtorch.data.DataLoader;
import org.jtorch.data.Sample;
import org.jtorch.examples.Example;
import org.jtorch.examples.ExampleOptions;
import org.jtorch.examples.ImageData;
import org.jtorch.io.PyTorchFile;
import org.jtorch.memory.MemoryScope;
import org.jtorch.nn.BCELoss;
import org.jtorch.nn.BatchNorm2d;
import org.jtorch.nn.Conv2d;
import org.jtorch.nn.ConvTranspose2d;
import org.jtorch.nn.Init;
import org.jtorch.nn.LeakyReLU;
import org.jtorch.nn.Module;
import org.jtorch.nn.ReLU;
import org.jtorch.nn.Sequential;
import org.jtorch.nn.Sigmoid;
import org.jtorch.nn.Tanh;
import org.jtorch.optim.Adam;
import org.jtorch.types.Generator;
import org.jtorch.vision.Images;
import org.jtorch.vision.transforms.Normalize;

/**
 * pytorch/examples {@code dcgan/main.py} at 32x32 on MNIST (the original is 64x64: one transposed and
 * one plain convolution fewer here). nz 100, ngf = ndf = 64, Adam (lr 2e-4, betas 0.5, 0.999) for both
 * networks, BCE, DCGAN's N(0, 0.02) initialisation, 25 epochs of batches of 64. Every 100 iterations (and
 * at an epoch's last) it writes {@code real_samples.png} and {@code fake_samples_epoch_NNN.png} (64 images
 * from fixed noise); after each epoch {@code netG_epoch_N.pth} and {@code netD_epoch_N.pth} (PyTorch's format).
 * {@code --quick}: the first 1,024 training images, one epoch.
 */
public final class DcganExample implements Example {
    public static final int NZ = 100;

    @Override
    public String name() {
        return "dcgan";
    }

    @Override
    public String summary() {
        return "a DCGAN at 32x32 on MNIST, saving image grids of its samples, as dcgan/main.py";
    }

    /** main.py's {@code weights_init}: convolutions N(0, 0.02); batch-norm weights N(1, 0.02), biases 0. */
    static void weightsInit(Module m) {
        // main.py matches on the class name, as here: Conv2d and ConvTranspose2d, and BatchNorm2d.
        String className = m.getClass().getSimpleName();
        if (className.contains("Conv")) {
            Init.normal_(m.parameter("weight"), 0.0, 0.02);
        } else if (className.contains("BatchNorm")) {
            Init.normal_(m.parameter("weight"), 1.0, 0.02);
            Init.zeros_(m.parameter("bias"));
        }
    }

    /** The generator: noise {@code [B, nz, 1, 1]} to images {@code [B, nc, 32, 32]} in [-1, 1]. */
    public static final class NetG extends Module {
        // Children are not final: deepCopy points a copy's fields at its own children (Module#deepCopy).
        private Sequential main;

        public NetG(int nz, int ngf, int nc) {
            main = registerModule("main", new Sequential(
                    new ConvTranspose2d(nz, ngf * 4, 4, ConvTranspose2d.options().stride(1).padding(0).bias(false)),
                    new BatchNorm2d(ngf * 4), new ReLU(),                                                  // 4x4
                    new ConvTranspose2d(ngf * 4, ngf * 2, 4, ConvTranspose2d.options().stride(2).padding(1).bias(false)),
                    new BatchNorm2d(ngf * 2), new ReLU(),                                                  // 8x8
                    new ConvTranspose2d(ngf * 2, ngf, 4, ConvTranspose2d.options().stride(2).padding(1).bias(false)),
                    new BatchNorm2d(ngf), new ReLU(),                                                      // 16x16
                    new ConvTranspose2d(ngf, nc, 4, ConvTranspose2d.options().stride(2).padding(1).bias(false)),
                    new Tanh()));                                                                          // 32x32
            apply(DcganExample::weightsInit);
        }

        @Override
        public Tensor forward(Tensor input) {
            return main.forward(input);
        }
    }

    /** The discriminator: images {@code [B, nc, 32, 32]} to the probability that each is real, {@code [B]}. */
    public static final class NetD extends Module {
        private Sequential main;

        public NetD(int ndf, int nc) {
            main = registerModule("main", new Sequential(
                    new Conv2d(nc, ndf, 4, Conv2d.options().stride(2).padding(1).bias(false)),
                    new LeakyReLU(0.2),                                                                    // 16x16
                    new Conv2d(ndf, ndf * 2, 4, Conv2d.options().stride(2).padding(1).bias(false)),
                    new BatchNorm2d(ndf * 2), new LeakyReLU(0.2),                                          // 8x8
                    new Conv2d(ndf * 2, ndf * 4, 4, Conv2d.options().stride(2).padding(1).bias(false)),
                    new BatchNorm2d(ndf * 4), new LeakyReLU(0.2),                                          // 4x4
                    new Conv2d(ndf * 4, 1, 4, Conv2d.options().stride(1).padding(0).bias(false)),
                    new Sigmoid()));
            apply(DcganExample::weightsInit);
        }

        @Override
        public Tensor forward(Tensor input) {
            return main.forward(input).view(-1);
        }
    }

    /** The numbers main.py prints for one iteration. */
    public record StepResult(double lossD, double lossG, double dX, double dGz1, double dGz2) {}

    /** One iteration of main.py: a discriminator step on a real and a fake batch, then a generator step. */
    public static final class Training {
        public final NetG netG;
        public final NetD netD;
        public final Adam optimizerG, optimizerD;
        private BCELoss criterion = new BCELoss();
        private final int nz;

        public Training(int nz, int ngf, int ndf, int nc, double lr) {
            this.nz = nz;
            netG = new NetG(nz, ngf, nc);
            netD = new NetD(ndf, nc);
            optimizerD = new Adam(netD.parameters(), Adam.options().lr(lr).betas(0.5, 0.999));
            optimizerG = new Adam(netG.parameters(), Adam.options().lr(lr).betas(0.5, 0.999));
        }

        public StepResult step(Tensor real) {
            try (MemoryScope scope = new MemoryScope()) {
                long b = real.size(0);
                // (1) Update D: maximize log(D(x)) + log(1 - D(G(z)))
                netD.zeroGrad();
                Tensor output = netD.forward(real).view(-1);
                Tensor errDReal = criterion.forward(output, Torch.ones(b));
                errDReal.backward();
                double dX = output.mean().item();
                Tensor fake = netG.forward(Torch.randn(b, nz, 1, 1));
                output = netD.forward(fake.detach()).view(-1);
                Tensor errDFake = criterion.forward(output, Torch.zeros(b));
                errDFake.backward();
                double dGz1 = output.mean().item();
                double errD = errDReal.item() + errDFake.item();
                optimizerD.step();
                // (2) Update G: maximize log(D(G(z)))
                netG.zeroGrad();
                output = netD.forward(fake).view(-1);
                Tensor errG = criterion.forward(output, Torch.ones(b));
                errG.backward();
                double dGz2 = output.mean().item();
                optimizerG.step();
                return new StepResult(errD, errG.item(), dX, dGz1, dGz2);
            }
        }
    }

    @Override
    public void run(ExampleOptions o, PrintStream out) throws IOException {
        Torch.manualSeed(o.seed());
        int epochs = o.epochs(o.quick() ? 1 : 25);
        int batchSize = o.batchSize(64);
        ImageData.Split data = ImageData.load(o.dataset("mnist"), 32, new Normalize(new double[] {0.5}, new double[] {0.5}),
                o.quick() ? 1024 : 0, 1, out);
        DataLoader<Sample> loader = DataLoader.builder(data.train()).batchSize(batchSize).shuffle(true)
                .generator(new Generator(o.seed())).build();
        Path outf = o.outDir();
        Files.createDirectories(outf);
        Training t = new Training(NZ, 64, 64, 1, o.lr(0.0002));
        Tensor fixedNoise = Torch.randn(batchSize, NZ, 1, 1).untrack();
        int steps = 0;
        for (int epoch = 0; epoch < epochs && steps < o.maxSteps(); epoch++) {
            int i = 0;
            for (Sample batch : loader) {
                if (steps++ >= o.maxSteps()) break;
                StepResult r = t.step(batch.input());
                out.printf(Locale.ROOT, "[%d/%d][%d/%d] Loss_D: %.4f Loss_G: %.4f D(x): %.4f D(G(z)): %.4f / %.4f%n",
                        epoch, epochs, i, loader.size(), r.lossD(), r.lossG(), r.dX(), r.dGz1(), r.dGz2());
                // main.py saves every 100 iterations; the last iteration of a run is saved too, so short runs show their result.
                if (i % 100 == 0 || i == loader.size() - 1 || steps == o.maxSteps()) {
                    Images.saveImage(batch.input(), outf.resolve("real_samples.png"), Images.GridOptions.defaults().normalize(true));
                    try (MemoryScope scope = new MemoryScope(); var g = Grad.noGrad()) {
                        Tensor fake = t.netG.forward(fixedNoise);   // in training mode, as main.py
                        Images.saveImage(fake, outf.resolve(String.format(Locale.ROOT, "fake_samples_epoch_%03d.png", epoch)),
                                Images.GridOptions.defaults().normalize(true));
                    }
                }
                i++;
            }
            PyTorchFile.saveStateDict(outf.resolve("netG_epoch_" + epoch + ".pth"), t.netG);
            PyTorchFile.saveStateDict(outf.resolve("netD_epoch_" + epoch + ".pth"), t.netD);
        }
    }
}
