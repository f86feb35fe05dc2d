"""PyTorch side of `jtorch bench examples` (ExamplesBench.java): the same programs, models and steps, each in a fresh
Python process, 'name value' lines: NAME_step_ms (median of the last 40% of the steps), NAME_first_step_s (launch to
the end of the first step) and NAME_steady_s (launch to the start of the first five steps whose mean throughput is
at least 90% of the steady state's). The models follow pytorch/examples (mnist, vae, dcgan at 32x32,
word_language_model, time_sequence_prediction), nanoGPT (char GPT) and bench_cnn.py (LeNet-5, ResNet-20, and
torchvision's ResNet-18). [--quick] [--only NAME]"""
import math
import os
import subprocess
import sys
import time

PROGRAMS = ["mnist", "vae", "dcgan", "word_lm_lstm", "word_lm_transformer", "char_gpt", "time_seq_f64",
            "lenet5", "resnet20", "resnet18_64px"]
MIN_STEPS, MAX_STEPS, WINDOW = 8, 5000, 5
TEXT = "/usr/share/common-licenses/GPL-3"


def budget_seconds(quick):
    return 4 if quick else 20  # as ExamplesBench.budgetSeconds


def arg(name):
    return sys.argv[sys.argv.index(name) + 1] if name in sys.argv else None


def run_all(quick, only):
    failed = []
    for name in PROGRAMS:
        if only is not None and name != only:
            continue
        cmd = [sys.executable, os.path.abspath(__file__), "--program", name, "--launched-at", str(time.time_ns() // 1000)]
        if quick:
            cmd.append("--quick")
        sys.stdout.flush()
        status = subprocess.call(cmd)
        if status != 0:
            failed.append(f"{name} (exit status {status})")
    if only is not None and only not in PROGRAMS:
        failed.append(f"{only} (unknown program)")
    if failed:
        print("bench_examples.py: failed: " + ", ".join(failed), file=sys.stderr)
        sys.exit(1)


def run_one(name, quick, launched_at_us):
    anchor_us, anchor_ns = time.time_ns() // 1000, time.perf_counter_ns()
    launch_to_anchor = (anchor_us - launched_at_us) * 1e-6
    import torch  # in the timed start-up, as a program's own import is
    torch.set_num_threads(2)
    torch.manual_seed(0)
    step = SET_UPS[name](torch)
    steps, ends = [], []
    start, budget = time.perf_counter(), budget_seconds(quick)
    while len(steps) < MAX_STEPS and (len(steps) < MIN_STEPS or time.perf_counter() - start < budget):
        t0 = time.perf_counter_ns()
        step()
        t1 = time.perf_counter_ns()
        steps.append((t1 - t0) * 1e-9)
        ends.append(launch_to_anchor + (t1 - anchor_ns) * 1e-9)
    n = len(steps)
    steady = sorted(steps[n - max(3, n * 2 // 5):])[max(3, n * 2 // 5) // 2]
    steady_at = math.nan
    for k in range(n - WINDOW + 1):
        if sum(steps[k:k + WINDOW]) / WINDOW <= steady / 0.9:
            steady_at = ends[k] - steps[k]
            break
    print(f"{name}_step_ms {steady * 1e3:.4f}")
    print(f"{name}_first_step_s {ends[0]:.4f}")
    print(f"{name}_steady_s {steady_at:.4f}")


# The programs: each builds its model, optimizer and one synthetic batch, and returns one training step.

def mnist(torch):
    F = torch.nn.functional
    model = fixture_models().MnistNet()
    optimizer = torch.optim.Adadelta(model.parameters(), lr=1.0)
    data, target = torch.randn(64, 1, 28, 28), torch.randint(0, 10, (64,))

    def step():
        model.train()
        optimizer.zero_grad()
        loss = F.nll_loss(model(data), target)
        loss.backward()
        optimizer.step()
        return loss.item()
    return step


def vae(torch):
    nn, F = torch.nn, torch.nn.functional

    class VAE(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1 = nn.Linear(784, 400)
            self.fc21 = nn.Linear(400, 20)
            self.fc22 = nn.Linear(400, 20)
            self.fc3 = nn.Linear(20, 400)
            self.fc4 = nn.Linear(400, 784)

        def forward(self, x):
            h1 = F.relu(self.fc1(x.view(-1, 784)))
            mu, logvar = self.fc21(h1), self.fc22(h1)
            z = mu + torch.randn_like(logvar) * torch.exp(0.5 * logvar)
            return torch.sigmoid(self.fc4(F.relu(self.fc3(z)))), mu, logvar

    model = VAE()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    data = torch.rand(128, 1, 28, 28)

    def step():
        model.train()
        optimizer.zero_grad()
        recon, mu, logvar = model(data)
        bce = F.binary_cross_entropy(recon, data.view(-1, 784), reduction="sum")
        kld = -0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp())
        loss = bce + kld
        loss.backward()
        optimizer.step()
        return loss.item()
    return step


def dcgan(torch):
    nn = torch.nn
    nz, ngf, ndf, nc = 100, 64, 64, 1

    def weights_init(m):
        name = m.__class__.__name__
        if name.find("Conv") != -1:
            nn.init.normal_(m.weight, 0.0, 0.02)
        elif name.find("BatchNorm") != -1:
            nn.init.normal_(m.weight, 1.0, 0.02)
            nn.init.zeros_(m.bias)

    # dcgan/main.py's networks, one (transposed) convolution fewer for 32x32 images, as DcganExample.java.
    net_g = nn.Sequential(
        nn.ConvTranspose2d(nz, ngf * 4, 4, 1, 0, bias=False), nn.BatchNorm2d(ngf * 4), nn.ReLU(True),
        nn.ConvTranspose2d(ngf * 4, ngf * 2, 4, 2, 1, bias=False), nn.BatchNorm2d(ngf * 2), nn.ReLU(True),
        nn.ConvTranspose2d(ngf * 2, ngf, 4, 2, 1, bias=False), nn.BatchNorm2d(ngf), nn.ReLU(True),
        nn.ConvTranspose2d(ngf, nc, 4, 2, 1, bias=False), nn.Tanh())
    net_d = nn.Sequential(
        nn.Conv2d(nc, ndf, 4, 2, 1, bias=False), nn.LeakyReLU(0.2, inplace=True),
        nn.Conv2d(ndf, ndf * 2, 4, 2, 1, bias=False), nn.BatchNorm2d(ndf * 2), nn.LeakyReLU(0.2, inplace=True),
        nn.Conv2d(ndf * 2, ndf * 4, 4, 2, 1, bias=False), nn.BatchNorm2d(ndf * 4), nn.LeakyReLU(0.2, inplace=True),
        nn.Conv2d(ndf * 4, 1, 4, 1, 0, bias=False), nn.Sigmoid())
    net_g.apply(weights_init)
    net_d.apply(weights_init)
    criterion = nn.BCELoss()
    optimizer_d = torch.optim.Adam(net_d.parameters(), lr=2e-4, betas=(0.5, 0.999))
    optimizer_g = torch.optim.Adam(net_g.parameters(), lr=2e-4, betas=(0.5, 0.999))
    real = torch.rand(64, 1, 32, 32) * 2 - 1

    def step():
        b = real.size(0)
        net_d.zero_grad()
        output = net_d(real).view(-1)
        err_d_real = criterion(output, torch.full((b,), 1.0))
        err_d_real.backward()
        d_x = output.mean().item()
        fake = net_g(torch.randn(b, nz, 1, 1))
        output = net_d(fake.detach()).view(-1)
        err_d_fake = criterion(output, torch.full((b,), 0.0))
        err_d_fake.backward()
        d_g_z1 = output.mean().item()
        err_d = err_d_real + err_d_fake
        optimizer_d.step()
        net_g.zero_grad()
        output = net_d(fake).view(-1)
        err_g = criterion(output, torch.full((b,), 1.0))
        err_g.backward()
        d_g_z2 = output.mean().item()
        optimizer_g.step()
        return err_d.item(), err_g.item(), d_x, d_g_z1, d_g_z2
    return step


def word_vocabulary():
    """data.py's Corpus over WordLanguageModel.Corpus's split of the default text: every word of every line, and <eos>."""
    words = {"<eos>"}
    with open(TEXT, encoding="utf-8") as f:
        for line in f.read().split("\n"):
            words.update(line.split())
    return len(words)


def word_lm(torch, transformer):
    nn, F = torch.nn, torch.nn.functional
    ntoken, ninp, nhid, nlayers, dropout, bsz, bptt, lr, clip = word_vocabulary(), 200, 200, 2, 0.2, 20, 35, 20.0, 0.25

    class RNNModel(nn.Module):
        def __init__(self):
            super().__init__()
            self.drop = nn.Dropout(dropout)
            self.encoder = nn.Embedding(ntoken, ninp)
            self.rnn = nn.LSTM(ninp, nhid, nlayers, dropout=dropout)
            self.decoder = nn.Linear(nhid, ntoken)
            nn.init.uniform_(self.encoder.weight, -0.1, 0.1)
            nn.init.zeros_(self.decoder.bias)
            nn.init.uniform_(self.decoder.weight, -0.1, 0.1)

        def forward(self, input, hidden):
            emb = self.drop(self.encoder(input))
            output, hidden = self.rnn(emb, hidden)
            decoded = self.decoder(self.drop(output)).view(-1, ntoken)
            return F.log_softmax(decoded, dim=1), hidden

        def init_hidden(self, b):
            return torch.zeros(nlayers, b, nhid), torch.zeros(nlayers, b, nhid)

    class PositionalEncoding(nn.Module):
        def __init__(self, d_model, max_len=5000):
            super().__init__()
            self.dropout = nn.Dropout(p=dropout)
            pe = torch.zeros(max_len, d_model)
            position = torch.arange(0, max_len, dtype=torch.float).unsqueeze(1)
            div_term = torch.exp(torch.arange(0, d_model, 2).float() * (-math.log(10000.0) / d_model))
            pe[:, 0::2] = torch.sin(position * div_term)
            pe[:, 1::2] = torch.cos(position * div_term)
            self.register_buffer("pe", pe.unsqueeze(0).transpose(0, 1))

        def forward(self, x):
            return self.dropout(x + self.pe[:x.size(0), :])

    class TransformerModel(nn.Module):
        def __init__(self):
            super().__init__()
            self.pos_encoder = PositionalEncoding(ninp)
            self.transformer_encoder = nn.TransformerEncoder(nn.TransformerEncoderLayer(ninp, 2, nhid, dropout), nlayers)
            self.encoder = nn.Embedding(ntoken, ninp)
            self.decoder = nn.Linear(ninp, ntoken)
            nn.init.uniform_(self.encoder.weight, -0.1, 0.1)
            nn.init.zeros_(self.decoder.bias)
            nn.init.uniform_(self.decoder.weight, -0.1, 0.1)

        def forward(self, src, hidden):
            t = src.size(0)
            mask = torch.triu(torch.full((t, t), float("-inf")), diagonal=1)
            src = self.pos_encoder(self.encoder(src) * math.sqrt(ninp))
            output = self.decoder(self.transformer_encoder(src, mask))
            return F.log_softmax(output, dim=-1).view(-1, ntoken), None

        def init_hidden(self, b):
            return None

    model = TransformerModel() if transformer else RNNModel()
    data, targets = torch.randint(0, ntoken, (bptt, bsz)), torch.randint(0, ntoken, (bptt * bsz,))
    state = {"hidden": model.init_hidden(bsz)}

    def step():
        model.train()
        model.zero_grad()
        output, hidden = model(data, state["hidden"])
        loss = F.nll_loss(output, targets)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
        with torch.no_grad():
            for p in model.parameters():
                p.add_(p.grad, alpha=-lr)
        state["hidden"] = None if hidden is None else tuple(h.detach() for h in hidden)
        return loss.item()
    return step


def char_gpt(torch):
    nn, F = torch.nn, torch.nn.functional
    with open(TEXT, encoding="utf-8") as f:
        vocab = len(set(f.read()))
    block, batch, n_layer, n_head, n_embd = 64, 12, 4, 4, 128
    flash = hasattr(F, "scaled_dot_product_attention")  # nanoGPT's choice: PyTorch 2 has it, 1.13 does not

    class CausalSelfAttention(nn.Module):
        def __init__(self):
            super().__init__()
            self.c_attn = nn.Linear(n_embd, 3 * n_embd)
            self.c_proj = nn.Linear(n_embd, n_embd)
            if not flash:
                self.register_buffer("bias", torch.tril(torch.ones(block, block)).view(1, 1, block, block))

        def forward(self, x):
            b, t, c = x.size()
            q, k, v = self.c_attn(x).split(n_embd, dim=2)
            k = k.view(b, t, n_head, c // n_head).transpose(1, 2)
            q = q.view(b, t, n_head, c // n_head).transpose(1, 2)
            v = v.view(b, t, n_head, c // n_head).transpose(1, 2)
            if flash:
                y = F.scaled_dot_product_attention(q, k, v, attn_mask=None, dropout_p=0, is_causal=True)
            else:
                att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
                att = att.masked_fill(self.bias[:, :, :t, :t] == 0, float("-inf"))
                y = F.softmax(att, dim=-1) @ v
            y = y.transpose(1, 2).contiguous().view(b, t, c)
            return self.c_proj(y)

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln_1 = nn.LayerNorm(n_embd)
            self.attn = CausalSelfAttention()
            self.ln_2 = nn.LayerNorm(n_embd)
            self.c_fc = nn.Linear(n_embd, 4 * n_embd)
            self.gelu = nn.GELU()
            self.c_proj = nn.Linear(4 * n_embd, n_embd)

        def forward(self, x):
            x = x + self.attn(self.ln_1(x))
            return x + self.c_proj(self.gelu(self.c_fc(self.ln_2(x))))

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.wte = nn.Embedding(vocab, n_embd)
            self.wpe = nn.Embedding(block, n_embd)
            self.h = nn.ModuleList([Block() for _ in range(n_layer)])
            self.ln_f = nn.LayerNorm(n_embd)
            self.lm_head = nn.Linear(n_embd, vocab, bias=False)
            self.wte.weight = self.lm_head.weight
            for name, p in self.named_parameters():
                if name.endswith("c_proj.weight"):
                    nn.init.normal_(p, 0.0, 0.02 / math.sqrt(2 * n_layer))

        def forward(self, idx, targets):
            t = idx.size(1)
            x = self.wte(idx) + self.wpe(torch.arange(0, t, dtype=torch.long))
            for blk in self.h:
                x = blk(x)
            logits = self.lm_head(self.ln_f(x))
            return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))

    model = GPT()
    decay = [p for p in model.parameters() if p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    optimizer = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": no_decay, "weight_decay": 0.0}],
                                  lr=1e-3, betas=(0.9, 0.99))
    x, y = torch.randint(0, vocab, (batch, block)), torch.randint(0, vocab, (batch, block))

    def step():
        model.train()
        loss = model(x, y)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        return loss.item()
    return step


def time_seq_f64(torch):
    nn = torch.nn
    import numpy as np
    # generate_sine_wave.py's waves (97 of 100 points for training); one L-BFGS iteration per step, as ExamplesBench.java.
    t_, length, n = 20, 100, 100
    rng = np.random.default_rng(2)
    x = np.arange(length)[None, :] + rng.integers(-4 * t_, 4 * t_, n)[:, None]
    data = torch.from_numpy(np.sin(x / 1.0 / t_)).double()
    input, target = data[3:, :-1], data[3:, 1:]
    seq = fixture_models().Sequence().double()
    criterion = nn.MSELoss()
    optimizer = torch.optim.LBFGS(seq.parameters(), lr=0.8, max_iter=1)

    def step():
        def closure():
            optimizer.zero_grad()
            loss = criterion(seq(input), target)
            loss.backward()
            return loss
        return optimizer.step(closure).item()
    return step


def cnn_models():
    import bench_cnn  # this script's folder is on the path
    return bench_cnn


def fixture_models():
    """tools/fixtures/gen_examples.py: the MNIST CNN and time_sequence_prediction's Sequence, as checked against jtorch."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools", "fixtures"))
    import gen_examples
    return gen_examples


SET_UPS = {
    "mnist": mnist,
    "vae": vae,
    "dcgan": dcgan,
    "word_lm_lstm": lambda torch: word_lm(torch, False),
    "word_lm_transformer": lambda torch: word_lm(torch, True),
    "char_gpt": char_gpt,
    "time_seq_f64": time_seq_f64,
    "lenet5": lambda torch: cnn_models().training_step(cnn_models().LeNet5(), 64, (1, 28, 28)),
    "resnet20": lambda torch: cnn_models().training_step(cnn_models().ResNet20(), 128, (3, 32, 32)),
    "resnet18_64px": lambda torch: cnn_models().training_step(cnn_models().ResNet18(), 32, (3, 64, 64)),
}


if __name__ == "__main__":
    quick = "--quick" in sys.argv
    if "--program" in sys.argv:
        run_one(arg("--program"), quick, int(arg("--launched-at")))
    else:
        run_all(quick, arg("--only"))
