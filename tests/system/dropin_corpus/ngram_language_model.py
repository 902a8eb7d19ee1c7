"""The N-gram language model from the word-embeddings tutorial: Embedding, Linear, log_softmax,
NLLLoss, trained with SGD."""
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim

CONTEXT_SIZE = 2
EMBEDDING_DIM = 8
test_sentence = """When forty winters shall besiege thy brow, And dig deep trenches in thy beauty's field,
Thy youth's proud livery so gazed on now, Will be a totter'd weed of small worth held""".split()
ngrams = [([test_sentence[i - j - 1] for j in range(CONTEXT_SIZE)], test_sentence[i])
          for i in range(CONTEXT_SIZE, len(test_sentence))]
print(ngrams[:3])
vocab = sorted(set(test_sentence))
word_to_ix = {word: i for i, word in enumerate(vocab)}


class NGramLanguageModeler(nn.Module):
    def __init__(self, vocab_size, embedding_dim, context_size):
        super().__init__()
        self.embeddings = nn.Embedding(vocab_size, embedding_dim)
        self.linear1 = nn.Linear(context_size * embedding_dim, 32)
        self.linear2 = nn.Linear(32, vocab_size)

    def forward(self, inputs):
        embeds = self.embeddings(inputs).view((inputs.shape[0], -1))
        out = F.relu(self.linear1(embeds))
        out = self.linear2(out)
        return F.log_softmax(out, dim=1)


losses = []
loss_function = nn.NLLLoss()
torch.manual_seed(1)
model = NGramLanguageModeler(len(vocab), EMBEDDING_DIM, CONTEXT_SIZE)
optimizer = optim.SGD(model.parameters(), lr=0.5)
ctx = torch.tensor([[word_to_ix[w] for w in c] for c, _ in ngrams], dtype=torch.long)
tgt = torch.tensor([word_to_ix[t] for _, t in ngrams], dtype=torch.long)
for epoch in range(20):
    model.zero_grad()
    log_probs = model(ctx)
    loss = loss_function(log_probs, tgt)
    loss.backward()
    optimizer.step()
    losses.append(loss.item())
print(log_probs.shape, log_probs.grad_fn.__class__.__name__)
print("loss went down:", losses[-1] < losses[0] * 0.5)
print(model.embeddings.weight[word_to_ix["beauty's"]].shape)
