"""Shared code for the "Self-Attention from Scratch" notebooks: one idea per module, and where it is taught.

    running_example   the sentences, the vocabulary and their static embeddings       00-04, 08-09, 11
    similarity        cosine, softmax and its entropy (NumPy)                           01-05
    mixing            contextual vectors as hand-weighted mixtures                       00, 01
    temperature       softmax at a chosen scale                                          02
    attention         self-attention in NumPy: loops, rows, matrices                     03
    attention_plots   hulls, gravity pictures and timing plots                           03
    playground        the data behind the attention playground                           03
    attention_torch   scaled dot-product attention and SelfAttention in PyTorch         03-11
    learning          learned vs parameter-free attention on a small task                04
    scaling           why √d_k: variance, saturation, gradients                          05
    luong             Luong attention, cross- and self-attention side by side            06
    cost              parameters, FLOPs and memory of attention, as arithmetic           07, 09, 11
    fast_attention    the same attention with less memory traffic (lean, tiled), and      07, 11
                      FlashAttention: tiles of keys, a running softmax, a recomputing backward
    measure           time and peak memory of a call on CPU or CUDA; the benchmark      03, 07, 09, 11, benchmarks/
    positions         word order: sinusoidal and learned positions, the offset rotation  08
    heads             many heads, padding masks, a KV cache, dropout on the weights      09-11
    induction         a two-layer attention-only model trained to copy; its heads read  10
                      by scores and switched off (weights and log in helpers/data/)
    plotting          the course's figures: labelled heatmaps, vector arrows            all
    environment       seeds, versions and devices                                        00-11
    validation        input checks for where a person types, with errors that name what was expected
    exercises/        one checker module per notebook (Feedback, Solution)
    widgets/          thin interactive shells over plain functions; widgets/common: LiveWidget (the base
                      of every widget), presenter sizes, the HTML heatmap, fast figures

Budget: 5,000 lines for notebooks 00-07, about 600 more for each new one (7,400 with 08 to 11)."""

__version__ = "1.0.0"
