"""Exercise checkers, one module per notebook, sharing `feedback`.

Each checker takes the student's answer (a value or a function), returns a
`Feedback` that says what is right or what to fix, and never raises.
Each module also offers `solution_*` functions that reveal a worked solution.
"""
from helpers.exercises.feedback import Feedback, Solution

__all__ = ["Feedback", "Solution"]
