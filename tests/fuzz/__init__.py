"""A mutation fuzzer for mncore-ir's tools: ``python -m tests.fuzz.run --help``.

It mutates the IR of the lit tests and examples (and IR the compiler produced from
them), runs ``mncore-opt`` and ``mncore-run`` on each mutant in a forked worker, and
reports every outcome that is not a result or a real diagnosis: an escaped traceback,
an internal exception shown as a message, a hang, a memory blow-up, a crashed worker,
or (``--differential``) levels of the compiler that disagree on the same inputs.
"""
