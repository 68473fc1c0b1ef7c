"""A word-level language model written the way pytorch/examples' word_language_model writes
it: Embedding -> nn.LSTM or nn.GRU (2 layers, sequence-first) -> Linear decoder, with
init_hidden from weight.new_zeros, the hidden state repackaged (detached) between batches,
clip_grad_norm_ and a hand-written SGD step; then a bidirectional GRU classifier over a
packed batch (pack_padded_sequence with enforce_sorted=False, h_n of both directions)."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence


class RNNModel(nn.Module):
    def __init__(self, rnn_type, ntoken, ninp, nhid, nlayers):
        super().__init__()
        self.encoder = nn.Embedding(ntoken, ninp)
        self.rnn = getattr(nn, rnn_type)(ninp, nhid, nlayers, dropout=0.0)
        self.decoder = nn.Linear(nhid, ntoken)
        self.rnn_type, self.nhid, self.nlayers = rnn_type, nhid, nlayers
        initrange = 0.1
        nn.init.uniform_(self.encoder.weight, -initrange, initrange)
        nn.init.zeros_(self.decoder.bias)
        nn.init.uniform_(self.decoder.weight, -initrange, initrange)

    def forward(self, input, hidden):
        emb = self.encoder(input)
        output, hidden = self.rnn(emb, hidden)
        decoded = self.decoder(output).view(-1, self.decoder.out_features)
        return F.log_softmax(decoded, dim=1), hidden

    def init_hidden(self, bsz):
        weight = next(self.parameters())
        if self.rnn_type == "LSTM":
            return (weight.new_zeros(self.nlayers, bsz, self.nhid),
                    weight.new_zeros(self.nlayers, bsz, self.nhid))
        return weight.new_zeros(self.nlayers, bsz, self.nhid)


def repackage_hidden(h):
    if isinstance(h, torch.Tensor):
        return h.detach()
    return tuple(repackage_hidden(v) for v in h)


text = "the cat sat on the mat and the dog sat on the log " * 6
vocab = sorted(set(text))
data = torch.tensor([vocab.index(c) for c in text], dtype=torch.long)
bsz, bptt = 4, 8
nbatch = data.size(0) // bsz
data = data[:nbatch * bsz].view(bsz, -1).t().contiguous()      # (S, B)

for rnn_type in ("LSTM", "GRU"):
    model = RNNModel(rnn_type, len(vocab), 8, 16, 2)
    criterion = nn.NLLLoss()
    hidden = model.init_hidden(bsz)
    lr = 2.0
    for epoch in range(2):
        for i in range(0, data.size(0) - 1, bptt):
            seq_len = min(bptt, len(data) - 1 - i)
            source, target = data[i:i + seq_len], data[i + 1:i + 1 + seq_len].reshape(-1)
            model.zero_grad()
            hidden = repackage_hidden(hidden)
            output, hidden = model(source, hidden)
            loss = criterion(output, target)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 0.25)
            for p in model.parameters():
                p.data.add_(p.grad, alpha=-lr)
        print(rnn_type, epoch, f"{loss.item():.5f}", f"{math.exp(loss.item()):.4f}")
    print(rnn_type, "h_n", hidden[0].shape if rnn_type == "LSTM" else hidden.shape)


class Classifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(len(vocab), 6, padding_idx=0)
        self.gru = nn.GRU(6, 5, batch_first=True, bidirectional=True)
        self.head = nn.Linear(10, 2)

    def forward(self, x, lengths):
        packed = pack_padded_sequence(self.embed(x), lengths, batch_first=True,
                                      enforce_sorted=False)
        out, h_n = self.gru(packed)
        padded, out_lengths = pad_packed_sequence(out, batch_first=True)
        return self.head(torch.cat([h_n[0], h_n[1]], dim=1)), padded, out_lengths


words = ["cat", "the mat", "dog", "on the log", "sat", "the cat sat"]
x = torch.zeros(len(words), 11, dtype=torch.long)
for row, w in enumerate(words):
    x[row, :len(w)] = torch.tensor([vocab.index(c) for c in w])
lengths = torch.tensor([len(w) for w in words])
labels = torch.tensor([0, 1, 0, 1, 0, 1])
clf = Classifier()
opt = torch.optim.Adam(clf.parameters(), lr=0.05)
for step in range(15):
    logits, padded, out_lengths = clf(x, lengths)
    loss = F.cross_entropy(logits, labels)
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 5 == 4:
        print("classifier", step, f"{loss.item():.5f}")
past_end = padded[0, 3:].abs().sum().item()        # "cat" has 3 steps: zeros after them
print("padded", tuple(padded.shape), out_lengths.tolist(), f"{past_end:.3f}")
