"""Shared code for the "Self-Attention from Scratch" notebooks.

One idea per module:
    running_example   the sentences, the vocabulary and their static embeddings
    similarity        dot product, cosine, softmax (NumPy and torch)
    plotting          the course's figures: labelled heatmaps, vector arrows
    environment       seeds, versions and devices
    validation        input checks with errors that name what was expected
    exercises/        one checker module per notebook
    widgets/          thin interactive shells over plain functions
"""

__version__ = "1.0.0"
