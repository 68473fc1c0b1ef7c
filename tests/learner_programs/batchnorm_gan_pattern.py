"""A small GAN trained the way textbook chapters train one: the discriminator (with BatchNorm)
scores the real batch and then the generated one before a single backward, BCELoss against
ones / zeros made with device=, the generator stepped through the discriminator, uniform noise
in [-1, 1), and the epoch's losses averaged through torch.FloatTensor(list).mean(). It runs in
float64 (model.double()): in float32 Adam's steps on near-zero gradients amplify roundoff
until torch's own CPU kernels and NumPy's part in the third digit of the running mean."""
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

z_size, n_features = 6, 10
device = torch.device("cpu")
gen = nn.Sequential(nn.Linear(z_size, 16), nn.BatchNorm1d(16), nn.LeakyReLU(0.2),
                    nn.Linear(16, n_features), nn.Tanh())
disc = nn.Sequential(nn.Linear(n_features, 16), nn.BatchNorm1d(16), nn.LeakyReLU(0.2),
                     nn.Linear(16, 1), nn.Sigmoid())
gen.double()
disc.double()
loss_fn = nn.BCELoss()
g_opt = torch.optim.Adam(gen.parameters(), 0.0003)
d_opt = torch.optim.Adam(disc.parameters(), 0.0002)
real_data = torch.tanh(torch.randn(48, n_features, dtype=torch.float64) + 0.5)
loader = DataLoader(TensorDataset(real_data), batch_size=12, shuffle=True, drop_last=True)


def noise(n):
    return torch.rand(n, z_size, dtype=torch.float64) * 2 - 1


for epoch in range(1, 4):
    gen.train()
    d_losses, g_losses = [], []
    for (x,) in loader:
        disc.zero_grad()
        p_real = disc(x)
        p_fake = disc(gen(noise(x.size(0))))
        ones = torch.ones(x.size(0), 1, device=device, dtype=torch.float64)
        zeros = torch.zeros(x.size(0), 1, device=device, dtype=torch.float64)
        d_loss = loss_fn(p_real, ones) + loss_fn(p_fake, zeros)
        d_loss.backward()
        d_opt.step()
        d_losses.append(d_loss.data.item())
        gen.zero_grad()
        g_labels = torch.ones((x.size(0), 1), device=device, dtype=torch.float64)
        g_loss = loss_fn(disc(gen(noise(x.size(0)))), g_labels)
        g_loss.backward()
        g_opt.step()
        g_losses.append(g_loss.data.item())
    print(f"Epoch {epoch:03d} | G/D {torch.FloatTensor(g_losses).mean():.4f}"
          f"/{torch.FloatTensor(d_losses).mean():.4f} | real {p_real.detach().mean():.4f}"
          f" fake {p_fake.detach().mean():.4f}")
bn = disc[1]
print(bn.num_batches_tracked, bn.running_mean[:3], bn.running_var[:3])
gen.eval()
with torch.no_grad():
    print(gen(noise(3))[:, :4])
