"""Shared code for the "Self-Attention from Scratch" notebooks.

One idea per module:
    running_example   the sentences, the vocabulary and their static embeddings
    similarity        dot product, cosine, softmax (NumPy and torch)
    plotting          the course's figures: labelled heatmaps, vector arrows
    environment       seeds, versions and devices
    validation        input checks with errors that name what was expected
    mixing            contextual vectors as hand-weighted mixtures (notebooks 00, 01)
    temperature       softmax at a chosen scale (notebook 02's widget)
    attention         self-attention in NumPy: loops, rows, matrices (notebook 03)
    attention_plots   hulls, gravity pictures and timing plots (notebook 03)
    playground        the data behind notebook 03's playground
    attention_torch   scaled dot-product attention and SelfAttention in PyTorch
    learning          the learned-vs-parameter-free experiment (notebook 04)
    scaling           why √d_k: variance, saturation, gradients (notebook 05)
    luong             Luong attention, cross- and self-attention side by side (notebook 06)
    cost              parameters, FLOPs and memory of attention (notebook 07)
    fast_attention    the same attention with less memory traffic (notebook 07)
    measure           the time and peak memory of one call, on CPU or CUDA
    devices           device, dtype, GPU peaks, SDPA's kernel, what fits in memory
    benchmarking      naive vs fused attention over sizes: rows, tables (notebook 07, benchmarks/)
    exercises/        one checker module per notebook
    widgets/          thin interactive shells over plain functions
"""

__version__ = "1.0.0"
