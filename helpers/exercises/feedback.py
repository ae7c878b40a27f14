"""What every checker shares: a `Feedback` verdict (never an exception), safe calls, folded `Solution`s."""
from __future__ import annotations

import html
import inspect
import textwrap
from dataclasses import dataclass

import numpy as np

from helpers import validation as check


@dataclass(frozen=True)
class Feedback:
    """The verdict on one answer: `.passed` says whether it is right; `if feedback:` is refused as ambiguous."""

    passed: bool
    message: str

    def __bool__(self) -> bool:
        raise TypeError("A Feedback is neither true nor false: use feedback.passed, "
                        "or `is not None` to test whether a check found a problem.")

    def __repr__(self) -> str:
        return ("✅ Correct: " if self.passed else "❌ Not yet: ") + self.message

    def _repr_html_(self) -> str:
        colour, mark = ("#1b7f3b", "✅ Correct:") if self.passed else ("#b3261e", "❌ Not yet:")
        return (f'<div style="border-left:5px solid {colour};padding:6px 10px;margin:4px 0;'
                f'font-size:1.05em"><b style="color:{colour}">{mark}</b> '
                f"{html.escape(self.message)}</div>")


def correct(message: str) -> Feedback:
    return Feedback(True, message)


def wrong(message: str) -> Feedback:
    return Feedback(False, message)


class Solution:
    """A worked solution: folded in the notebook (click to open), plain text elsewhere."""

    def __init__(self, title: str, code: str, explanation: str = ""):
        self.title = title
        self.code = textwrap.dedent(code).strip()
        self.explanation = explanation

    @classmethod
    def from_function(cls, title: str, function, explanation: str = "") -> Solution:
        """Show the source code of a reference function as the solution."""
        return cls(title, inspect.getsource(function), explanation)

    def __repr__(self) -> str:
        text = f"Solution: {self.title}\n\n{self.code}"
        return text + (f"\n\n{self.explanation}" if self.explanation else "")

    def _repr_html_(self) -> str:
        note = f"<p>{html.escape(self.explanation)}</p>" if self.explanation else ""
        return (f"<details><summary><b>Show the solution: {html.escape(self.title)}</b></summary>"
                f"<pre>{html.escape(self.code)}</pre>{note}</details>")


def require_callable(answer, expected: str):
    """Feedback if `answer` is not a function, else None. `expected` describes the function."""
    if callable(answer):
        return None
    return wrong(f"expected a function ({expected}), but got {_kind(answer)}. "
                 "Pass the function itself, without calling it: check(my_function), not check(my_function()).")


def call_student(function, *args, **kwargs):
    """Call the student's function; return (result, None) or (None, Feedback on the error)."""
    try:
        return function(*args, **kwargs), None
    except Exception as error:  # the student sees what went wrong, the notebook goes on
        if isinstance(error, NotImplementedError) and not error.args:  # the exercise's own placeholder line
            return None, wrong("the function still raises NotImplementedError. Replace that line with your code.")
        return None, wrong(f"your function raised {type(error).__name__}: {error}")


def numbers_from(function, *args, on: str = "", name: str = "the result"):
    """Call the student's function and read the result as numbers: (array, None) or (None, Feedback "on <on>: ...")."""
    with np.errstate(all="ignore"):
        result, problem = call_student(function, *args)
    got, problem = as_numbers(result, name) if problem is None else (None, problem)
    return got, (wrong(f"on {on}: {problem.message}") if on and problem is not None else problem)


def as_numbers(value, name: str):
    """(array, None) if `value` is numbers, else (None, Feedback naming what came)."""
    if value is None:
        return None, wrong(f"{name} is None. If it is a variable, replace None with your answer; if a function "
                           "made it, did the function forget to `return` its result?")
    try:
        return check.as_array(value, name), None
    except TypeError as error:
        return None, wrong(str(error))


def one_number(value, name: str, what: str = "a number", *, returned: bool = False, finite: bool = True):
    """(float, None) for one real number, else (None, Feedback); `returned`: from a function; `finite`: no NaN, inf."""
    if value is None:
        if returned:
            return None, wrong(f"{name} returned None. Did the function forget to `return` {what}?")
        return None, wrong(f"{name} is still None. Replace None with {what}.")
    if isinstance(value, (str, bytes)):
        return None, wrong(f"{name} is the text {value!r:.40} (a {type(value).__name__}), not a number: it should "
                           "be one number. Remove the quotes (and any units).")
    if hasattr(value, "detach"):
        value = value.detach().cpu().numpy()
    if isinstance(value, (bool, np.bool_)) or (isinstance(value, np.ndarray) and value.dtype == bool):
        return None, wrong(f"{name} is {value!r}, a truth value: it should be one number, {what}.")
    if isinstance(value, (list, tuple)):
        count = len(value)
        return None, wrong(f"{name} is a {type(value).__name__} of {count} number{'s' if count != 1 else ''}: "
                           f"it should be one number, {what}.")
    if np.iscomplexobj(value):
        return None, wrong(f"{name} is a complex number ({value!r:.40}); it should be one real number.")
    try:
        array = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        return None, wrong(f"{name} should be one number, {what}, but got {_kind(value)}.")
    if array.size != 1:
        return None, wrong(f"{name} should be one number, {what}, but has {array.size} numbers (shape {array.shape}).")
    number = float(array.reshape(()))
    if finite and not np.isfinite(number):
        return None, wrong(f"{name} = {number} is not a finite number: it should be {what}.")
    return number, None


def text_answer(answer, what: str):
    """(the stripped text, None) for a string answer, else (None, Feedback). `what` says what to write."""
    if answer is None:
        return None, wrong(f"answer is still None. Replace it with {what}.")
    if not isinstance(answer, str):
        return None, wrong(f"answer should be {what}, but got {type(answer).__name__} {answer!r:.40}.")
    return answer.strip(), None


def named_slip(got, slips, *, atol: float = 1e-6, right=None):
    """Feedback for the first (value, message) in `slips` that `got` matches and that differs from `right`."""
    for value, message in slips:
        value = np.asarray(value, dtype=np.float64)
        if (value.shape == got.shape and np.allclose(got, value, atol=atol)
                and (right is None or not np.allclose(value, right, atol=atol))):
            return wrong(message)
    return None


def compare_numbers(got, expected, name: str, *, atol: float = 1e-4, hint: str = "", slips=()):
    """None if `got` matches `expected`, else a Feedback saying how it differs (naming a slip if one matches)."""
    got, problem = as_numbers(got, name)
    if problem is not None:
        return problem
    expected = np.asarray(expected, dtype=np.float64)
    hint = f" {hint}" if hint else ""
    if got.shape != expected.shape:
        return wrong(f"{name} has shape {got.shape}, expected {expected.shape}.{hint}")
    if (problem := named_slip(got, slips, atol=atol, right=expected)) is not None:
        return problem
    if not np.all(np.isfinite(got)):
        return wrong(f"{name} contains NaN or infinity. Look for a division by zero or an exp that overflowed.")
    if not np.allclose(got, expected, atol=atol, rtol=0):
        where = tuple(int(i) for i in np.argwhere(~np.isclose(got, expected, atol=atol, rtol=0))[0])
        at = f" at position {where}" if where else ""
        direction = "too large" if got[where] > expected[where] else "too small"
        return wrong(f"{name} has the right shape but the wrong values{at}: {got[where]:.4g} is {direction}.{hint}")
    return None


def _kind(value) -> str:
    shape = getattr(value, "shape", None)
    return f"{type(value).__name__} " + (f"of shape {tuple(shape)}" if shape is not None else f"({value!r:.60})")
