"""Python that retc embeds at build time parses (py_compile): the torch
target's helpers (emit/torch/helpers.py, copied into torch configs) and the
runtime (runtime/retc_runtime.py). Each helper is one top-level definition
(or assignment), separated from the next by two blank lines, as the emitter
splits them (used_helpers in emit/torch/).

Run alone as `python test_sources.py NAME`; ctest runs both in one process (cases.py).
"""
# ctest-group: 2  (cases per process: tests/integration/cases.py)

import ast
import os
import py_compile
import re
import sys
import tempfile

SOURCE = os.environ["RETC_SOURCE_DIR"]


def compile_file(rel):
    with tempfile.TemporaryDirectory() as tmp:
        py_compile.compile(os.path.join(SOURCE, rel), cfile=os.path.join(tmp, "out.pyc"), doraise=True)


def test_torch_helpers_compile():
    compile_file("emit/torch/helpers.py")
    path = os.path.join(SOURCE, "emit/torch/helpers.py")
    text = open(path).read()
    tree = ast.parse(text)
    defs = []
    for n in tree.body:
        if isinstance(n, (ast.FunctionDef, ast.ClassDef)):
            defs.append(n.name)
        elif isinstance(n, ast.Assign):
            defs.append(n.targets[0].id)
    blocks = [b.strip() for b in text.split("\n\n\n") if b.strip()]
    assert blocks[0].startswith('"""'), "the file opens with its docstring"
    heads = [re.match(r"(?:def |class )?(\w+)", b).group(1) for b in blocks[1:]]
    assert heads == defs, (heads, defs)
    assert len(defs) >= 40, defs


def test_runtime_compiles():
    compile_file("runtime/retc_runtime.py")


if __name__ == "__main__":
    globals()["test_" + sys.argv[1]]()
    print("ok:", sys.argv[1])
