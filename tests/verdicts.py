"""Assertions on a checker's Feedback, and a student's module, shared by the exercise tests."""
import torch

from helpers.exercises.engine import Feedback


def verdict(feedback):
    """(passed, message) of a Feedback, after checking that it is one."""
    assert isinstance(feedback, Feedback)
    return feedback.passed, feedback.message


def failing(feedback, *fragments):
    """The answer was refused, and the message names every fragment. Returns the message."""
    passed, message = verdict(feedback)
    assert not passed, message
    for fragment in fragments:
        assert fragment in message, message
    return message


def student_module(attend, prepare=lambda x: x):
    """A MySelfAttention as a student writes it: three bias-free nn.Linear, forward = attend(Q, K, V) on prepare(x)."""
    class Module(torch.nn.Module):
        def __init__(self, d_model, d_k):
            super().__init__()
            self.W_q, self.W_k, self.W_v = (torch.nn.Linear(d_model, d_k, bias=False) for _ in range(3))

        def forward(self, x):
            x = prepare(x)
            return attend(self.W_q(x), self.W_k(x), self.W_v(x))
    return Module
