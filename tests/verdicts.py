"""Assertions on a checker's Feedback, shared by the exercise tests."""
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
