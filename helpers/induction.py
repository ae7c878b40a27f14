"""Notebook 10: a two-layer, attention-only Transformer trained to copy, and its heads read and switched off.

    AttentionOnlyTransformer()        tokens (B, T) -> logits (B, T, vocab): embeddings + positions, causal
                                      multi-head attention added to the residual stream, an unembedding
    repeated_batch(B, g, offset)      random tokens with a repeated segment -> tokens (B, T), copy (B, T - 1)
    probe_tokens(n, B)                n distinct random letters, then the same n again: (B, 2n)
    next_token_losses(model, tokens)  (B, T) -> (B, T - 1) cross-entropy of every next-token prediction
    train(n_layers, offset)           AdamW from a fixed seed -> (model, log); train_all(): the three models
    load_trained_model(name)          the committed weights (helpers/data/induction.pt), in eval mode
    attention_patterns(model, tokens) the weights every head used: (n_layers, B, H, T, T)
    previous_token_score(W)           (..., T, T) -> (...) mean weight on key i - 1
    induction_score(W, n)             (..., 2n, 2n) -> (...) mean weight on key i - n + 1 (after the earlier copy)
    heads_off(model, heads)           a context in which those heads' outputs are zeros
    copy_loss(model, tokens, copy)    mean loss where a copy can be predicted
    layer_input_parts(model, tokens)  layer 1's input as the sum of its parts: token, position, each head of layer 0
    prediction_data(...)              what the notebook 10 widget shows

Tokens are the letters a … t (vocabulary 20); the causal mask is helpers.attention_torch.causal_mask."""
import contextlib
import time
from pathlib import Path

import torch
import torch.nn as nn
import torch.nn.functional as F

from helpers.attention_torch import causal_mask
from helpers.heads import MultiHeadAttention, split_heads
from helpers.measure import cpu_threads
from helpers.positions import LearnedPositions
from helpers.validation import count, describe, head_pairs

LETTERS = "abcdefghijklmnopqrst"                 # token id i is LETTERS[i]
CONTEXT, D_MODEL, N_HEADS, SEGMENT = 32, 64, 2, (4, 16)   # SEGMENT: shortest and longest repeated segment
TWO_LAYERS, ONE_LAYER, FIXED_OFFSET = "two layers", "one layer", "one layer, fixed offset"
#: name -> (n_layers, repeat offset (None: drawn per sequence), training steps)
RECIPES = {TWO_LAYERS: (2, None, 1500), ONE_LAYER: (1, None, 600), FIXED_OFFSET: (1, CONTEXT // 2, 300)}
LR, BATCH, SEED, PROBE_SEED = 2e-3, 64, 0, 1234
PROBE_HALVES = tuple(range(SEGMENT[0], SEGMENT[1] + 1))   # every segment length the data draws, at offset n
WEIGHTS = Path(__file__).with_name("data") / "induction.pt"
#: A head is named for a score of at least this much (of a weight of 1 to share).
NAMED_AT = 0.4


class AttentionOnlyTransformer(nn.Module):
    """tokens (B, T) -> logits (B, T, vocab). No MLP and no LayerNorm: every computation is attention.

    Parameters: vocab · d_model (embed) + context · d_model (positions) + n_layers · 4 · d_model² + d_model · vocab."""

    def __init__(self, vocab_size: int = len(LETTERS), context_length: int = CONTEXT, d_model: int = D_MODEL,
                 n_layers: int = 2, n_heads: int = N_HEADS):
        super().__init__()
        self.vocab_size, self.context_length = vocab_size, context_length
        self.n_layers, self.n_heads = n_layers, n_heads
        self.embed = nn.Embedding(vocab_size, d_model)               # one row per token (notebook 01's table)
        self.positions = LearnedPositions(context_length, d_model)   # one row per position (notebook 08)
        self.layers = nn.ModuleList(MultiHeadAttention(d_model, n_heads) for _ in range(n_layers))   # notebook 09
        self.unembed = nn.Linear(d_model, vocab_size, bias=False)    # a score for every possible next token

    def forward(self, tokens):
        check_token_ids(tokens, self)                    # tokens: (B, T) whole numbers 0 … vocab − 1, T ≤ context
        T = tokens.size(1)
        x = self.embed(tokens) + self.positions(T)       # (B, T, d_model): the residual stream
        mask = causal_mask(T, device=tokens.device)      # (T, T): no token sees a later one
        for attention in self.layers:
            x = x + attention(x, mask)                   # (B, T, d_model): each layer adds what its heads read
        return self.unembed(x)                           # (B, T, vocab): logits for the token after each position


def check_token_ids(tokens, model) -> None:
    """A named error for tokens the model cannot read: (B, T) integers in 0 … vocab − 1, T ≤ context_length."""
    if (not isinstance(tokens, torch.Tensor) or tokens.dim() != 2 or tokens.dtype not in (torch.int64, torch.int32)
            or tokens.size(1) > model.context_length or (tokens.numel() and not 0 <= tokens.min() <= tokens.max()
                                                         < model.vocab_size)):
        raise ValueError(f"tokens should be a (B, T) tensor of whole numbers 0 … {model.vocab_size - 1} (int64: "
                         f".long()) with T ≤ {model.context_length} (the positions the model learned), but got "
                         f"{type(tokens).__name__} {tuple(getattr(tokens, 'shape', ()))} "
                         f"{getattr(tokens, 'dtype', '')}. encode('abc') gives tensor([[0, 1, 2]]).")


def parameter_count(vocab: int, context: int, d_model: int, n_layers: int) -> int:
    """The formula in AttentionOnlyTransformer's docstring."""
    return vocab * d_model + context * d_model + n_layers * 4 * d_model ** 2 + d_model * vocab


def encode(letters: str) -> torch.Tensor:
    """'abc' -> tensor([[0, 1, 2]]): one sequence of letters a … t as a (1, T) batch (spaces are dropped)."""
    text = letters.replace(" ", "") if isinstance(letters, str) else letters
    if not isinstance(text, str) or not 1 <= len(text) <= CONTEXT:
        raise ValueError(f"type between 1 and {CONTEXT} letters (the positions the model learned), but got "
                         f"{len(text) if isinstance(text, str) else type(text).__name__}.")
    if bad := [(i, c) for i, c in enumerate(text) if c not in LETTERS]:
        raise ValueError(f"{bad[0][1]!r} (position {bad[0][0]}, spaces aside) is not one of the model's {len(LETTERS)} "
                         f"tokens: type only the letters {LETTERS[0]} … {LETTERS[-1]} (spaces are ignored).")
    return torch.tensor([[LETTERS.index(c) for c in text]])


# --- the data --------------------------------------------------------------------------------------
def repeated_batch(batch_size: int, generator: torch.Generator, offset: int | None = None, T: int = CONTEXT):
    """Random tokens in which a segment of L tokens appears again D = offset tokens later, from position b on.

    offset None: drawn per sequence, L in SEGMENT, then b in [L, T − L], then D in [L, b]. A fixed offset: b = D,
    L as long as fits. Returns tokens (B, T) and copy (B, T − 1): True where token i and token i + 1 are copies."""
    tokens = torch.randint(0, len(LETTERS), (batch_size, T), generator=generator)      # (B, T)
    u = torch.rand(batch_size, 3, generator=generator)                                 # three draws per row
    if offset is None:
        L = SEGMENT[0] + (u[:, :1] * (SEGMENT[1] - SEGMENT[0] + 1)).long()            # (B, 1) segment length
        b = L + (u[:, 1:2] * (T - 2 * L + 1)).long()                                   # (B, 1) the copy's start
        D = L + (u[:, 2:] * (b - L + 1)).long()                                        # (B, 1) how far back
    else:
        b = D = torch.full((batch_size, 1), count(offset, "offset (a copy needs room)", 2, T - 2))
        L = min(offset, T - offset)
    i = torch.arange(T)                                                                # (T,)
    in_copy = (i >= b) & (i < b + L)                                                   # (B, T) the second copy
    tokens = tokens.gather(1, torch.where(in_copy, i - D, i))                          # token i − D copied to i
    return tokens, in_copy[:, :-1] & in_copy[:, 1:]                                    # (B, T), (B, T − 1)


def probe_tokens(n: int = CONTEXT // 2, batch_size: int = 100, seed: int = PROBE_SEED) -> torch.Tensor:
    """(B, 2n): n distinct random letters, then the same n again: for query i ≥ n, key i − n + 1 alone is right."""
    n = count(n, "n (distinct letters in a half)", high=len(LETTERS))       # a NumPy or torch whole number too
    draws = torch.rand(batch_size, len(LETTERS), generator=torch.Generator().manual_seed(seed + n))   # (B, 20)
    half = draws.argsort(dim=-1)[:, :n]                                    # (B, n) the letters shuffled, then cut
    return torch.cat([half, half], dim=1)


def probes(batch_size: int = 100) -> dict:
    """{n: probe_tokens(n)} for every segment length n the training draws (PROBE_HALVES)."""
    return {n: probe_tokens(n, batch_size) for n in PROBE_HALVES}


def next_token_losses(model, tokens):
    """(B, T) -> (B, T - 1): the cross-entropy of predicting token i + 1 from tokens 0 … i."""
    logits = model(tokens)[:, :-1]                                        # (B, T - 1, vocab)
    return F.cross_entropy(logits.transpose(1, 2), tokens[:, 1:], reduction="none")


def copy_loss(model, tokens, copy) -> float:
    """Mean next-token loss at the positions a copy can predict (copy (B, T - 1) True)."""
    with torch.no_grad():
        losses = next_token_losses(model, tokens)                     # (B, T - 1), the tokens checked
    if not ((mask := isinstance(copy, torch.Tensor) and copy.dtype == torch.bool and copy.shape == losses.shape)
            and copy.any()):
        got = "one that marks no position (the mean over none is NaN)" if mask else f"{describe(copy)} " \
            f"{getattr(copy, 'dtype', '')}".rstrip() + " (0/1 integers would pick rows: .bool() makes a mask)"
        raise ValueError(f"copy should be a bool tensor of shape {tuple(losses.shape)} (B, T − 1), True where a copy "
                         f"can be predicted, but got {got}.")
    return losses[copy].mean().item()


# --- training --------------------------------------------------------------------------------------
def train(n_layers: int = 2, offset: int | None = None, steps: int = 1500, *, seed: int = SEED, every: int = 25):
    """AdamW (lr LR, batch BATCH) from `seed`, on one CPU thread (one order of summing: a re-run gives the same
    sums). Returns the model in eval mode and its log: the mean loss at the copy and at the other positions on each
    step's batch (before its update), both scores of every head every `every` steps, and the seconds taken."""
    torch.manual_seed(seed)
    generator, probe_set = torch.Generator().manual_seed(seed), probes(batch_size=20)
    model = AttentionOnlyTransformer(n_layers=n_layers)
    optimiser = torch.optim.AdamW(model.parameters(), lr=LR)
    log, start = {"copy": [], "other": [], "score_steps": [], "scores": []}, time.perf_counter()
    with cpu_threads(1):
        for step in range(steps + 1):
            if step % every == 0 or step == steps:
                log["score_steps"].append(step)
                log["scores"].append(head_scores(model, probe_set))
            if step == steps:
                break
            tokens, copy = repeated_batch(BATCH, generator, offset)
            losses = next_token_losses(model, tokens)                    # (B, T - 1)
            optimiser.zero_grad()
            losses.mean().backward()
            optimiser.step()
            log["copy"].append(losses[copy].mean().item())
            log["other"].append(losses[~copy].mean().item())
    log = {name: torch.tensor(values) for name, values in log.items() if name != "scores"} | {
        "scores": torch.stack(log["scores"]), "seconds": time.perf_counter() - start}
    return model.eval(), log


def train_all() -> dict:
    """Train the three models of RECIPES; return the record that helpers/data/induction.pt holds."""
    record = {"torch": str(torch.__version__), "models": {}, "logs": {},
              "probes": {n: tokens.to(torch.uint8) for n, tokens in probes().items()}}
    for name, (n_layers, offset, steps) in RECIPES.items():
        model, record["logs"][name] = train(n_layers, offset, steps)
        record["models"][name] = model.state_dict()
        record["logs"][name]["final_scores"] = head_scores(model, record["probes"])
    return record


def load_record(path=WEIGHTS) -> dict:
    """The committed record: weights, training logs, the probe and its scores, the torch that made them."""
    return torch.load(path, weights_only=True)


def load_trained_model(name: str = TWO_LAYERS, record: dict | None = None) -> AttentionOnlyTransformer:
    """TWO_LAYERS, ONE_LAYER or FIXED_OFFSET from `record` (None: the committed one, load_record()), in eval mode."""
    if name not in RECIPES:   # a notebook cell a student may edit
        raise ValueError(f"name should be one of {tuple(RECIPES)}, but got {name!r:.40}.")
    model = AttentionOnlyTransformer(n_layers=RECIPES[name][0])
    model.load_state_dict((load_record() if record is None else record)["models"][name])
    return model.eval()


# --- reading the heads -----------------------------------------------------------------------------
def attention_patterns(model, tokens) -> torch.Tensor:
    """The weights every head used on `tokens` (B, T): (n_layers, B, H, T, T), each layer's `last_weights`."""
    with torch.no_grad():
        model(tokens)
    return torch.stack([layer.last_weights for layer in model.layers])


def previous_token_score(W) -> torch.Tensor:
    """(..., T, T) weights -> (...): the mean weight query i gives key i − 1, over queries 1 … T − 1."""
    i = torch.arange(1, W.size(-1))
    return W[..., i, i - 1].mean(-1)


def induction_score(W, n: int) -> torch.Tensor:
    """(..., 2n, 2n) weights on a repeated half -> (...): the mean weight query i gives key i − n + 1 (the token
    after the earlier copy of token i), over the second half's queries i = n … 2n − 1."""
    if W.shape[-2:] != (2 * count(n, "n"), 2 * n):
        raise ValueError(f"W should be (..., 2n, 2n) weights on n = {n} tokens said twice, but is {tuple(W.shape)}.")
    i = torch.arange(n, 2 * n)
    return W[..., i, i - n + 1].mean(-1)


def head_scores(model, probe_set=None) -> torch.Tensor:
    """(2, n_layers, H): every head's previous-token score [0] and induction score [1], averaged over the
    sequences of every probe in `probe_set` ({n: (B, 2n) tokens}; None: probes())."""
    scores = []
    for n, tokens in (probes() if probe_set is None else probe_set).items():
        W = attention_patterns(model, tokens.long())                      # (n_layers, B, H, 2n, 2n)
        scores.append(torch.stack([previous_token_score(W), induction_score(W, n)]).mean(2))
    return torch.stack(scores).mean(0)


def head_names(scores) -> dict:
    """{(layer, head): name} from the scores alone: the larger of its two scores, if at least NAMED_AT."""
    best = {(l, h): max(zip(scores[:, l, h].tolist(), ("previous-token head", "induction head")))   # (score, kind)
            for l in range(scores.size(1)) for h in range(scores.size(2))}
    return {head: kind if score >= NAMED_AT else "neither" for head, (score, kind) in best.items()}


# --- switching heads off ---------------------------------------------------------------------------
@contextlib.contextmanager
def heads_off(model, heads=()):
    """Inside the block, each (layer, head) in `heads` adds nothing: its d_k slice of the concatenated head
    outputs, merge_heads(Y), is set to zero before W_o mixes them (a forward pre-hook on that layer's W_o)."""
    heads = head_pairs(heads, model.n_layers, model.n_heads)            # [(layer, head), ...], each one checked
    def zero(layer, h):
        def hook(_, args):
            Y = args[0].clone()                                           # (B, T, H · d_k)
            Y[..., h * layer.d_k:(h + 1) * layer.d_k] = 0                 # head h's d_k outputs
            return (Y,)
        return hook
    hooks = [model.layers[l].W_o.register_forward_pre_hook(zero(model.layers[l], h)) for l, h in heads]
    try:
        yield model
    finally:
        for hook in hooks:
            hook.remove()


def ablation_table(model, tokens, copy) -> dict:
    """{None: copy loss with every head on, (layer, head): copy loss with that one head off}."""
    table = {None: copy_loss(model, tokens, copy)}
    for head in ((l, h) for l in range(model.n_layers) for h in range(model.n_heads)):
        with heads_off(model, [head]):
            table[head] = copy_loss(model, tokens, copy)
    return table


def layer_input_parts(model, tokens) -> dict:
    """Layer 1's input x = token + position + Σ_h (head h of layer 0) as its parts, each (B, T, d_model)."""
    W = attention_patterns(model, tokens)[0]   # (B, H, T, T) layer 0's weights; first, as the model names bad tokens
    layer, T = model.layers[0], tokens.size(1)
    x = model.embed(tokens) + model.positions(T)                          # (B, T, d_model)
    V = split_heads(layer.W_v(x), layer.n_heads)                          # (B, H, T, d_k)
    W_o = layer.W_o.weight.T.reshape(layer.n_heads, layer.d_k, -1)        # (H, d_k, d_model): W_o cut per head
    parts = {"token": model.embed(tokens), "position": model.positions(T).expand_as(x)}
    for h in range(layer.n_heads):
        parts[f"head 0.{h}"] = W[:, h] @ V[:, h] @ W_o[h]                 # (B, T, T) @ (B, T, d_k) @ (d_k, d_model)
    return {name: part.detach() for name, part in parts.items()}


# --- the widget's data -----------------------------------------------------------------------------
def prediction_data(model, letters: str, position: int, off=()) -> dict:
    """For query `position` of the typed letters: every head's weights over the keys, and the next-token
    probabilities with the heads in `off` switched off. Returns {"letters", "position", "weights" (n_layers · H, T),
    "probabilities" (vocab,), "prediction", "earlier" (the earlier position of the same letter after the longest
    stretch of the same letters, the latest if tied; None if there is none)}."""
    tokens = encode(letters)                                                  # (1, T), a named error if mistyped
    text, T = letters.replace(" ", ""), tokens.size(1)
    with heads_off(model, off), torch.no_grad(), cpu_threads(1):
        probabilities = F.softmax(model(tokens)[0, position], dim=-1)         # (vocab,)
    weights = torch.stack([layer.last_weights[0, :, position] for layer in model.layers])   # (n_layers, H, T)
    def matched(j):   # how many letters before j equal those before the query
        return next((k for k in range(j) if text[j - 1 - k] != text[position - 1 - k]), j)
    earlier = [j for j in range(position) if text[j] == text[position]]
    return {"letters": text, "position": position, "weights": weights.reshape(-1, T).numpy(),
            "probabilities": probabilities.numpy(), "prediction": LETTERS[int(probabilities.argmax())],
            "earlier": max(earlier, key=lambda j: (matched(j), j)) if earlier else None}
