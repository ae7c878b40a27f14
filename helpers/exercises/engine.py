"""The checker engine: an exercise declares what it expects, and one loop judges every answer.

    Feedback(passed, message)    the verdict on an answer, never an exception
    Solution(title, code, explanation)  a worked solution, folded in the notebook
    Case(*args, what=..., **s)   one input for the student's function; `what` names it in messages, `s` its sizes
    Exercise(reference, ...)     an exercise whose answer is a function, run on the fixed cases (the slips' witnesses),
                                 then on cases drawn afresh for each call: nothing printed on the page can be copied
    solved_by(title, code)       the worked solution of a checker whose answer is a value (counts, a symbol, text)
    readers                      as_numbers, one_number, whole_numbers, text_answer: what came, read as asked for
    calls_library(function, word)  whether an answer is, or calls, torch's, scipy's or the course's own `word`
    compare_numbers, named_slip  how an answer differs from the expected one (a wrong shape, a slip, rounding)

A student's exception reaches the diagnosis as the exception object: an exercise's `errors(case, error)`
dispatches on its type and on the case's inputs, never on its wording."""
import ast
import copy
import dis
import html
import inspect
import numbers
import sys
import textwrap
import traceback
import unicodedata
from dataclasses import dataclass
from functools import partial, wraps
from itertools import chain

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
        return (f'<div style="border-left:5px solid {colour};padding:6px 10px;margin:4px 0;font-size:1.05em;'
                'background:#fafafa;color:#1f1f1f">'   # a light box in a dark theme too: the colours keep 5:1
                f'<b style="color:{colour}">{mark}</b> {html.escape(self.message)}</div>')


correct, wrong = partial(Feedback, True), partial(Feedback, False)   # correct(message), wrong(message): a verdict


class Solution:
    """A worked solution: folded in the notebook (click to open), plain text elsewhere."""
    def __init__(self, title: str, code: str, explanation: str = ""):
        self.title, self.code, self.explanation = title, textwrap.dedent(code).strip(), explanation

    def __repr__(self) -> str:
        return f"Solution: {self.title}\n\n{self.code}" + (f"\n\n{self.explanation}" if self.explanation else "")

    def _repr_html_(self) -> str:
        note = f"<p>{html.escape(self.explanation)}</p>" if self.explanation else ""
        return (f"<details><summary><b>Show the solution: {html.escape(self.title)}</b></summary>"
                f"<pre>{html.escape(self.code)}</pre>{note}</details>")


def solved_by(title: str, code, explanation: str = "", read=None):
    """Decorator: `checker.solution()` shows this worked solution; `code` is text, or a function whose source it is.
    `read`: a partial of one_number, as_numbers or text_answer, to read the answer first; what it refuses is wrong."""
    code = code if isinstance(code, str) else inspect.getsource(code)
    def attach(checker):
        @wraps(checker)
        def reading_first(*args, **kwargs):   # check(E) or check(E=E), the name help() shows
            value, problem = read(*inspect.signature(checker).bind(*args, **kwargs).arguments.values())
            return checker(value) if problem is None else problem
        check = reading_first if read else checker
        check.solution = lambda: Solution(title, code, explanation)
        return check
    return attach


class Case:
    """One input for the student's function: the arguments (each call gets fresh copies), `what` (how a message
    names this input, with any sizes drawn at random), what its slips need (case.d_k) and any own atol32."""
    def __init__(self, *args, what: str, **sizes):
        self.args, self.what = args, what
        self.__dict__.update(sizes)


class Placeholder(Exception):
    """The exercise's own `raise NotImplementedError` line is still there."""


class Refusal(Exception):
    """Raised by an exercise's `call` hook to stop with its message (an answer that cannot even be run)."""


class Exercise:
    """An exercise whose answer is a function (or a class), judged against `reference` case by case.

    reference(*case.args) gives the expected answer; `cases()` the fixed cases, `draw(rng)` one case drawn afresh
    (`draws` of them per call, after the fixed ones; a tuple of such functions: one case from each). For each case
    the engine calls the answer, then asks in turn: did it raise (`errors(case, error)`), can its result be read as
    numbers (`read(result, case)` -> (array, None) or (None, message); None: the default reader, which calls it
    `reads`), does `judge(case, got, expected)` name a problem, is the shape exactly right (else is it a key of
    `shapes(case)` {shape: message}), is it one of the `slips(case)` [(value, message)], else what the answer gave
    for other inputs (an argument ignored), is it finite, is it within `atol`? The default `call` hands
    the answer copies (the last len(`keywords`) by those names) and refuses one that changes them. Hooks return
    whole messages, or None to let the engine go on. `atol32`: the tolerance for a result not rounded by hand, where
    float32 anywhere in the computation (inputs, weights, a √) shows; `atol` judges the rest. `where` and `name` are
    templates with {what}: the prefix of a case's messages and the result's name. `success`: text, or a function of
    the answer giving it; `own`: the course's function ("a or b": several) the student is to write, named in the
    success message if called (calls_library). `check.solution()`: `shown`, or else `reference`'s source."""
    def __init__(self, reference, *, title, expects, cases, draw, success, explanation="", draws=3, atol=1e-6,
                 rtol=0.0, name="the result on {what}", where="on {what}: ", hint="", slips=None, judge=None,
                 errors=None, read=None, call=None, expected=None, reads="the result", shapes=None, atol32=None,
                 own="", shown=None, keywords=()):
        self.reference, self.title, self.explanation, self.expects = reference, title, explanation, expects
        self.cases, self.success, self.draws = cases, success, draw if isinstance(draw, tuple) else (draw,) * draws
        self.atol, self.rtol, self.name, self.where, self.hint, self.shapes = atol, rtol, name, where, hint, shapes
        self.slips, self.judge, self.errors, self.read, self.reads = slips, judge, errors, read, reads
        self.atol32, self.call, self.keywords = atol32 or atol, call or self.run, keywords
        self.expected, self.own, self.shown = expected or (lambda case: reference(*case.args)), own, shown

    def __call__(self, answer) -> Feedback:
        if not callable(answer):
            return not_a_function(answer, self.expects)
        rng, seen = np.random.default_rng(), []                           # seeded afresh for every call
        try:   # each case made only when its turn comes: an answer refused early costs no more cases
            for drawn, case in chain(((False, c) for c in self.cases()), ((True, draw(rng)) for draw in self.draws)):
                if (message := self.judge_case(answer, case, seen)) is not None:
                    if drawn and case.what not in message:   # the sizes it used, to try them again
                        message = f"on {case.what}: {message}"
                    return wrong(message + notebook_data(answer))
        except Placeholder as unfinished:
            return wrong(raised(NotImplementedError(), *unfinished.args))
        return correct((self.success(answer) if callable(self.success) else self.success) + nudge(answer, self.own))

    def judge_case(self, answer, case: Case, seen: list) -> str | None:
        """The first problem with the answer on one case, as a message; None if it is right there. `seen`: the
        (case, result, expected) of the cases before, to which this one's are added."""
        where = self.where_of(case)
        with np.errstate(all="ignore"):
            try:
                result = self.call(answer, case)
            except Refusal as refusal:
                return str(refusal)
            except (Exception, SystemExit) as error:  # the student sees what went wrong, the notebook goes on
                if placeholder(error):   # the answer's own line, or a function of the student's that it calls
                    code = list(traceback.walk_tb(error.__traceback__))[-1][0].f_code   # where it was raised
                    raise Placeholder("" if getattr(answer, "__code__", code) is code else code.co_name) from None
                if type(error) is TypeError and self.call == self.run and (misfit := refused(answer, *self.split(
                        case.args))):
                    n, named = len(case.args) - len(self.keywords), [f" and {k}=… by name" for k in self.keywords]
                    return (f"{where}your function has the parameters {misfit}, but it is called with {n} "
                            f"argument{'s' * (n != 1)}{''.join(named)}, as in {self.expects}.")
                message = self.errors and self.errors(case, error) or where + raised(error) + (
                    self.other_width(answer, case, error) or self.given(case, error))
                return message.rstrip(".") + "." + hints if (hints := code_hints(answer, case.args, error)) else message
            if result is None:   # a forgotten `return`: named alike in every exercise, before any reader
                return f"{where}your {'forward' if inspect.isclass(answer) else 'function'} returned None. Did it " \
                       f"forget to `return` {getattr(case, 'reads', self.reads)}?"
            got, message = self.read and self.read(result, case) or self.numbers(result, case)
            if message is not None:
                return message
            expected = check.as_array(self.expected(case), "the expected answer")
            atol = self.atol if rounded(got, expected, range(1, 6)) else getattr(case, "atol32", self.atol32)
            twin = next((c for c, g, e in seen if same(g, got) and not same(e, expected)), None)
            seen.append((case, got, expected))
            if got.shape == expected.shape and np.isclose(got, expected, atol=atol, rtol=self.rtol).all():
                return None                    # right here: no judge may name it a slip
            if self.judge is not None and (message := self.judge(case, got, expected)) is not None:
                return message
            if self.shapes is not None and got.shape != expected.shape and got.shape in (table := self.shapes(case)):
                return table[got.shape]
            slips = self.slips(case) if self.slips else ()
            if twin is not None and named_slip(got, slips, atol=self.atol) is None:   # the same result, other inputs
                where = where or case.what and f"on {case.what}: "   # an exercise whose names carry no `where`
                return (f"{where}your function returned what it returned on {twin.what or 'an earlier input'}, though "
                        "the inputs differ: does it ignore an argument, or read a variable of the notebook instead?"
                        + f" It has shape {got.shape}, not {expected.shape}." * (got.shape != expected.shape))
            return compare_numbers(got, expected, self.name.format(what=case.what), atol=self.atol, rtol=self.rtol,
                                   hint=self.hint, slips=slips)

    def numbers(self, result, case: Case):
        """The result as an array, or a message on what came instead (the default `read`; a case may have its own
        `reads`, as its own `where`). A pair of arrays, such as (output, weights), is named (not two rows of it)."""
        reads = getattr(case, "reads", self.reads)
        if (isinstance(result, (tuple, list)) and len(result) == 2 and all(len(getattr(r, "shape", ())) for r in result)
                and (result[0].shape != result[1].shape or (2, *result[0].shape) != np.shape(self.expected(case)))):
            return None, (f"{self.where_of(case)}you returned a pair of arrays, of shapes {tuple(result[0].shape)} and "
                          f"{tuple(result[1].shape)}: perhaps (output, weights). Return only {reads}.")
        got, problem = as_numbers(result, reads)
        return got, None if problem is None else self.where_of(case) + problem.message

    def run(self, answer, case: Case):
        """The answer on fresh copies of the case's arguments (the default `call`): refused if it changed one."""
        result = answer(*(split := self.split(args := copy.deepcopy(case.args)))[0], **split[1])
        for name, mine, theirs in zip(inspect.signature(self.reference).parameters, case.args, args):
            if (not same(check.as_array(mine, name), check.as_array(theirs, name)) if hasattr(mine, "shape")
                    else isinstance(mine, (list, dict)) and repr(mine) != repr(theirs)):   # a list sorted, an entry set
                raise Refusal(f"{self.where_of(case)}{changed_in_place('your function', name, type(mine).__name__)}")
        return result

    def split(self, args: tuple) -> tuple[tuple, dict]:
        """The case's arguments as the answer gets them: the last len(keywords) by name."""
        n = len(args) - len(self.keywords)
        return args[:n], dict(zip(self.keywords, args[n:]))

    def other_width(self, answer, case: Case, error: Exception) -> str:
        """After torch's RuntimeError on tensors of one float width: if the answer is right on copies in the other
        width, a tensor it makes has a dtype that clashes with the inputs' (named); "" if not."""
        widths = set() if hasattr(case, "of") else {str(x.dtype) for x in case.args if hasattr(x, "detach")}
        if type(error) is not RuntimeError or widths not in ({"torch.float32"}, {"torch.float64"}):
            return ""
        width, twin = widths.pop()[6:], copy.copy(case)
        other, twin.of = "float32" if width == "float64" else "float64", case   # a twin has no twin of its own
        twin.args = tuple(x.to(getattr(sys.modules["torch"], other)) if hasattr(x, "detach") else x for x in case.args)
        if self.judge_case(answer, twin, []) is not None:   # wrong or failing there too: the widths are not the cause
            return ""
        return (f" (it is right on {other} copies of these {width} inputs). A tensor it makes has another dtype: "
                "torch.tensor of Python floats is float32, .float() and .double() convert. Keep the inputs' x.dtype.")

    def given(self, case: Case, error: Exception) -> str:
        """After NumPy's or torch's error on shapes that do not fit: the shapes the answer was given, and the hint."""
        given = [f"{name} {tuple(x.shape)}" for name, x in zip(inspect.signature(self.reference).parameters, case.args)
                 if hasattr(x, "shape")]
        shapes = type(error) in (ValueError, RuntimeError, IndexError, getattr(np, "exceptions", np).AxisError)
        said = f" (it was given {', '.join(given)})." if given else "." * (not str(error).rstrip().endswith("."))
        return shapes and f"{said} {self.hint}".rstrip() or ""

    def where_of(self, case: Case) -> str:
        """The prefix of this case's messages: the exercise's `where`, or the case's own."""
        return getattr(case, "where", self.where).format(what=case.what)

    def solution(self) -> Solution:
        return Solution(self.title, self.shown or inspect.getsource(self.reference), self.explanation)


#: After a TypeError from an answer that reads the other library, or spells its keywords: what the inputs are.
_AXES = ("; NumPy writes S.max(axis=-1, keepdims=True) where torch writes S.amax(dim=-1, keepdim=True) (torch's "
         "S.max(dim) returns a pair, (values, indices)).")
TORCH_INPUTS = " The inputs are torch tensors: use torch's functions on them (NumPy's would also cut autograd)" + _AXES
NUMPY_INPUTS = " The inputs are NumPy arrays: torch's functions need torch.as_tensor(x) first" + _AXES


def code_hints(answer, args, error: Exception) -> str:
    """After the answer raised, what the code it ran shows (its own and its helpers', not a library's): a ^ (XOR, not a
    power); after a TypeError, or an AttributeError for what the other library's array has (F.softmax asks a NumPy
    array for .softmax), TORCH_INPUTS or NUMPY_INPUTS if it is, or names, the other library (np, torch, F), its
    keywords (axis, keepdims; dim, keepdim) or a max without .values."""
    kinds = {hasattr(x, "detach") for x in args if hasattr(x, "shape")}   # {True}: torch's tensors; {False}: NumPy's
    codes = [f.f_code for f, _ in traceback.walk_tb(error.__traceback__) if str(f.f_globals.get("__name__")).split(
        ".")[0] not in {*sys.stdlib_module_names, "helpers", "torch", "numpy", "scipy"}]   # the student's frames
    names = {n for c in codes for n in (*c.co_names, *chain(*(t for t in c.co_consts if type(t) is tuple)))}
    names -= {"max"} if {"values", "indices"} & names else set()   # torch's S.max(dim).values, read as a pair
    names.add(str(getattr(getattr(answer, "func", answer), "__module__", "")).split(".")[0])   # torch.softmax itself
    kind = kinds.pop() if len(kinds) == 1 else None
    other = {True: {"np", "numpy", "from_numpy", "axis", "keepdims", "max"}, False: {"torch", "F", "dim", "keepdim"}
             }.get(kind, set())
    theirs = getattr(sys.modules.get("torch"), "Tensor", None) if kind is False else np.ndarray   # the other's array
    typed = type(error) is TypeError or type(error) is AttributeError and hasattr(theirs, str(error.name))
    xor = any(i.opname in ("BINARY_XOR", "INPLACE_XOR") or i.argrepr in ("^", "^=") for c in codes
              for i in dis.get_instructions(c))
    return (TORCH_INPUTS if "np" in other else NUMPY_INPUTS) * (typed and bool(other & names)) + (
        " In Python ^ is XOR, not a power: write x ** 2 (x ** 0.5 for a root)." * xor)


def same(a: np.ndarray, b: np.ndarray) -> bool:
    """Whether two arrays have one shape and the same numbers (NaN equal to NaN)."""
    return a.shape == b.shape and np.allclose(a, b, atol=1e-12, rtol=1e-9, equal_nan=True)


def changed_in_place(who: str, name: str, kind: str = "tensor") -> str:
    """The message for an answer (`who`: "your function", "forward") that changed its argument `name` in place."""
    how, new = ((f"{name}.sort(), .append(), {name}[…] = …", f"sorted({name}), {name} + […]") if kind == "list"
                else (f"{name} += …, {name}[…] = … or a method ending in _, such as .div_()", f"{name} = {name} + …, "
                      f"or a copy: .clone(), .copy(); .float(), .to() and np.asarray give back {name} itself if it has "
                      "that dtype already"))
    return (f"{who} changed its argument {name} in place ({how}), so the caller's {name} changes too: compute a new "
            f"one ({new}).")


def not_a_function(answer, expects: str) -> Feedback:
    return wrong(f"expected a function ({expects}), but got {_kind(answer)}. Pass the function itself, without "
                 "calling it: check(my_function), not check(my_function()).")


def refused(answer, args, keywords) -> inspect.Signature | None:
    """The answer's signature if it refuses these arguments (`keywords`: {name: value}); None if not, or unreadable."""
    signature = None
    try:
        signature = inspect.signature(answer)   # TypeError, ValueError: a builtin, or no signature to read (None)
        signature.bind(*args, **keywords)
    except (TypeError, ValueError):
        return signature
    return None


_SIZES = {"T", "T_q", "T_k", "d", "d_k", "d_v", "d_model", "n", "n_heads", "B", "H"}   #: sizes a notebook sets


def notebook_data(answer) -> str:
    """" Your function reads the notebook's …", naming the arrays, tensors, lists, dicts and whole numbers (d_k) that
    the answer (a function, one defined inside it, a class's forward) reads from the notebook, not its arguments."""
    answer = getattr(answer, "forward", answer) if inspect.isclass(answer) else answer
    codes, names = [answer.__code__] if inspect.isfunction(answer) or inspect.ismethod(answer) else [], {}
    data = (list, tuple, dict, np.ndarray, getattr(sys.modules.get("torch"), "Tensor", list))   # not EPS = 1e-9
    for code in codes:   # grows as it goes: the functions defined inside come after
        codes += [c for c in code.co_consts if inspect.iscode(c)]
        names |= {i.argval: 0 for i in dis.get_instructions(code) if i.opname == "LOAD_GLOBAL" and (isinstance(
            value := answer.__globals__.get(i.argval), data) or type(value) is int and i.argval in _SIZES)}
    return f" Your function reads the notebook's {', '.join(names)}: use the arguments it is given." if names else ""


def placeholder(error: Exception) -> bool:
    """Whether the error is the exercise's own `raise NotImplementedError` line (a library's carries a message)."""
    return type(error) is NotImplementedError and not error.args


def raised(error: Exception, raiser: str = "") -> str:
    if placeholder(error):
        return (f"your function calls {raiser}, which still raises NotImplementedError: finish {raiser} first."
                if raiser else "the function still raises NotImplementedError. Replace that line with your code.")
    if isinstance(error, SystemExit):
        return "your function called exit(), which ends the program (SystemExit). Return the result instead."
    return f"your function raised {type(error).__name__}: {str(error).rstrip()}"


# --- readers: what came, read as what was asked for ------------------------------------------------
def as_numbers(value, name: str):
    """(array, None) if `value` is numbers, else (None, Feedback naming what came)."""
    if value is None:
        return None, wrong(f"{name} is None. If it is a variable, replace None with your answer; if a function "
                           "made it, did the function forget to `return` its result?")
    if str(getattr(value, "dtype", "")) in ("torch.float16", "torch.bfloat16", "float16"):
        return None, wrong(f"{name} came as {value.dtype}, which keeps only about 3 significant digits. Keep float32 "
                           "or float64: no .half(), .bfloat16() or np.float16.")
    try:
        return check.as_array(value, name), None
    except Exception as error:   # not numbers (TypeError), or an object that cannot give them (a meta tensor)
        if isinstance(value, tuple) and any(v is None or hasattr(v, "shape") for v in value):   # return Y, W
            return None, wrong(f"{name} should be one array, but came as a tuple of {len(value)}: "
                               f"{', '.join(map(_kind, value))}. Keep only the array asked for.")
        return None, wrong(str(error))


def one_number(value, name: str, what: str = "a number", *, returned: bool = False, finite: bool = True):
    """(float, None) for one real number, else (None, Feedback); `returned`: from a function; `finite`: no NaN, inf."""
    if value is None:
        return None, wrong(f"{name} returned None. Did the function forget to `return` {what}?" if returned
                           else f"{name} is still None. Replace None with {what}.")
    said = "returned" if returned else "is"
    if isinstance(value, (str, bytes)) or isinstance(value, np.ndarray) and value.dtype.kind in "US":
        array = isinstance(value, np.ndarray)
        shown, kind = (value.tolist(), "a NumPy array of text") if array else (value, f"a {type(value).__name__}")
        return None, wrong(f"{name} {said} the text {shown!r:.40} ({kind}), not a number: it should be one number. "
                           "Remove the quotes (and any units).")
    if returned and str(getattr(value, "dtype", "")) in ("torch.float16", "torch.bfloat16", "float16"):
        return as_numbers(value, f"{name}'s result")     # a function's result kept in 16 bits: named
    kind, value = type(value).__name__, check.plain(value)   # a tensor as NumPy (bfloat16 as float64)
    if isinstance(value, (bool, np.bool_)) or (isinstance(value, np.ndarray) and value.dtype == bool):
        return None, wrong(f"{name} {said} {value!r}, a truth value: it should be one number, {what}.")
    if isinstance(value, (list, tuple)):
        return None, wrong(f"{name} {said} a {kind} of {len(value)} item{'s' * (len(value) != 1)}: "
                           f"it should be one number, {what}.")
    if np.iscomplexobj(value):
        return None, wrong(f"{name} {said} a complex number ({value!r:.40}); it should be one real number.")
    try:
        array = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError, OverflowError):
        return None, wrong(f"{name} should be one number, {what}, but got {_kind(value)}.")
    if array.size != 1:
        return None, wrong(f"{name} should be one number, {what}, but has {array.size} numbers (shape {array.shape}).")
    number = float(array.reshape(()))
    if finite and not np.isfinite(number):
        said = f"returned {number}, which" if returned else f"= {number}"
        return None, wrong(f"{name} {said} is not a finite number: it should be {what}.")
    return number, None


def returned_number(result, name: str, what: str, where: str = "", *, finite: bool = True):
    """One number a function returned, for an exercise's `read`: (0-d array, None), or (None, `where` + why not)."""
    value, problem = one_number(result, name, what, returned=True, finite=finite)
    return (np.asarray(value), None) if problem is None else (None, where + problem.message)


def whole_numbers(values):
    """(tuple of ints, None) for a list, tuple, array or tensor of whole numbers (28.0 counts), else (None, why)."""
    values = values.tolist() if hasattr(values, "tolist") else values   # a NumPy array or a torch tensor of sizes
    if not isinstance(values, (tuple, list)):
        return None, f"{values!r:.40} is not a tuple"
    sizes = []
    for n in values:
        n = n.item() if hasattr(n, "item") and np.prod(getattr(n, "shape", ())) == 1 else n   # one number in an array
        if isinstance(n, (bool, np.bool_)) or not isinstance(n, numbers.Real):
            what = check.describe(n) if hasattr(n, "shape") else repr(n)[:40]   # an array by its shape
            return None, f"{n!r} is a truth value" if isinstance(n, bool) else f"{what} is not a number"
        if not isinstance(n, numbers.Integral) and not float(n).is_integer():
            return None, f"{n!r} is not a whole number"
        sizes.append(int(n))
    return tuple(sizes), None


def text_answer(answer, what: str, name: str = "answer"):
    """(the stripped text, None) for a string answer, else (None, Feedback). `what` says what to write."""
    if answer is None:
        return None, wrong(f"{name} is still None. Replace it with {what}.")
    if not isinstance(answer, str):
        return None, wrong(f"{name} should be {what}, but got {type(answer).__name__} {answer!r:.40}.")
    return unicodedata.normalize("NFKC", answer).strip(" \t\n.,:$'\"`()"), None   # 𝑊, Ｗ, "$W$", "(W)", "W." are W


# --- what an answer calls ------------------------------------------------------------------------
def _a_library(thing) -> bool:
    """Whether `thing` (a function, class or module) is torch's, scipy's or the course's helpers' (exercises aside)."""
    module = str((thing.__name__ if inspect.ismodule(thing) else getattr(thing, "__module__", None)) or "")
    return module.split(".")[0] in {"torch", "scipy", "helpers"} and ".exercises" not in module   # helpers.x.f too


def calls_library(function, word: str) -> bool:
    """Whether the function is torch's, scipy's or the course's, or its own code (comments aside) calls one of theirs
    whose name holds `word`: "softmax" finds torch.softmax, F.softmax, nn.Softmax, x.softmax, the course's softmax."""
    function = getattr(function, "func", function)   # a functools.partial: the function it calls
    if _a_library(function) or any(c.__module__.startswith("helpers.") for c in getattr(function, "__mro__", ())):
        return True                          # check(softmax) with the course's own, check(torch.softmax), a subclass
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(function)))
    except (OSError, TypeError, SyntaxError):   # no source to read (a builtin, a lambda inside an expression)
        return False
    own = tree if inspect.isclass(function) else next(   # a class: all of it; a lambda: itself, not its whole line
        (node for node in ast.walk(tree) if isinstance(node, (ast.FunctionDef, ast.Lambda))), tree)
    local = {node.id for node in ast.walk(own) if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store)}
    local |= {node.arg for node in ast.walk(own) if isinstance(node, ast.arg)}   # its arguments and its variables
    local |= {node.name for node in ast.walk(own) if isinstance(node, (ast.FunctionDef, ast.ClassDef))}   # own defs
    scope = getattr(function, "__globals__", None) or getattr(inspect.getmodule(function), "__dict__", {})   # a class's
    names, word = {k: v for k, v in scope.items() if k not in local}, word.lower()
    for node in ast.walk(own):   # an import inside the answer binds a name too: to what the answer's run imported
        if isinstance(node, ast.ImportFrom):
            names.update({a.asname or a.name: getattr(sys.modules.get(node.module), a.name, None) for a in node.names})
        elif isinstance(node, ast.Import):   # import torch.nn.functional as F: that module; without `as`: torch
            names.update({(top := a.name.split(".")[0]) if not a.asname else a.asname: sys.modules.get(
                a.name if a.asname else top) for a in node.names})
    for node in ast.walk(own):
        if isinstance(node, ast.Attribute) and word in node.attr.lower():
            owner = ast.unparse(node.value).split(".")[0]   # nn.functional.x: nn's; utils.softmax: the student's
            if owner in names and _a_library(names[owner]) or owner not in names and word == "softmax":
                return True                  # torch.softmax, F.softmax, nn.Softmax, special.softmax, x.softmax
        named = names.get(getattr(node, "id", None))
        if isinstance(node, ast.Name) and _a_library(named) and word in (getattr(named, "__name__", "")
                                                                         or node.id).lower():
            return True                      # imported by name, or under another (softmax as sm)
    return False


def nudge(answer, own: str) -> str:
    """" It calls a ready-made …" if the answer calls the course's `own` ("a or b": any of several), else ""."""
    word = next((w for w in own.split(" or ") if own and calls_library(answer, w)), None)
    return f" It calls a ready-made {word}, though: write it yourself." if word else ""


# --- comparing numbers -----------------------------------------------------------------------------
def named_slip(got, slips, *, atol: float = 1e-6, right=None) -> str | None:
    """The message of the first (value, message) in `slips` that `got` matches and that differs from `right`.
    A value may be a function that computes it; one that cannot be computed for this input is no match."""
    for value, message in slips:
        try:
            value = check.as_array(value() if callable(value) else value, "a slip")
        except (RuntimeError, ValueError, IndexError):   # a slip whose shapes do not fit this input: not this answer
            continue
        if (value.shape == got.shape and np.allclose(got, value, atol=atol)
                and (right is None or not np.allclose(value, right, atol=atol))):
            return message
    return None


def compare_numbers(got, expected, name: str, *, atol: float = 1e-4, rtol: float = 0.0, hint: str = "",
                    slips=()) -> str | None:
    """None if `got` matches `expected` (the same shape, every entry within atol + rtol·|expected|), else how it
    differs: a wrong shape, transposed, a named slip, NaN, or the first entry off (without giving the answer away)."""
    hint, transposed = f" {hint}" if hint else "", "the numbers are right, transposed (rows and columns swapped)."
    swapped = np.swapaxes(got, -1, -2) if got.ndim > 1 else got   # each matrix of a batch transposed too
    turned = swapped.shape == expected.shape and np.allclose(swapped, expected, atol=atol, rtol=rtol) and got.ndim > 1
    if got.shape != expected.shape:   # the right numbers in another shape, (1, 4) for (4,): the hint would mislead
        right = got.size == expected.size and np.allclose(got.reshape(expected.shape), expected, atol=atol, rtol=rtol)
        said = f": {transposed}" if turned else ": the numbers are right, the shape is not." if right else f".{hint}"
        return f"{name} has shape {got.shape}, expected {expected.shape}{said}"
    if (message := named_slip(got, slips, atol=atol, right=expected)) is not None:
        return message
    if (off := ~np.isclose(got, expected, atol=atol, rtol=rtol)).any() and turned:   # square; a symmetric one passed
        return f"{name} has the right shape: {transposed}"
    if not np.all(np.isfinite(got) | ~np.isfinite(expected)):   # -inf is right where the answer is -inf
        return (f"{name} contains NaN or infinity. Look for an exp that overflowed, or a division by zero (0 / 0 "
                "where every exp fell to 0).")
    if off.any() and (decimals := rounded(got, expected)) is not None:
        return f"{name} is rounded to {decimals} decimal{'s' * (decimals > 1)}: return the numbers unrounded."
    if off.any():
        where = tuple(int(i) for i in np.argwhere(off)[0])
        direction = "too large" if got[where] > expected[where] else "too small"
        said = f"has the right shape but the wrong values at position {where}" if where else "is not right"
        return f"{name} {said}: {got[where]:.4g} is {direction}.{hint}"
    return None


def rounded(got, expected, decimals=range(1, 7)) -> int | None:
    """How many decimals `got` is `expected` rounded to (if it is that, in float64 or float32, and not `expected`)."""
    return next((k for k in decimals if got.shape == expected.shape and not np.allclose(got, expected, atol=1e-12)
                 and np.allclose(got, np.round(expected, k), atol=1e-12, rtol=1e-7)), None)


def _kind(value) -> str:
    shape = getattr(value, "shape", None)
    return f"{type(value).__name__} " + (f"of shape {tuple(shape)}" if shape is not None else f"({value!r:.60})")
