"""Exercise checkers, one module per notebook, on one engine (`engine`).

Each checker takes the student's answer (a value, or a function that the engine runs on fixed cases and on cases
drawn afresh for every call), returns a `Feedback` that says what is right or what to fix, and never raises.
`check_x.solution()` reveals a worked solution."""
