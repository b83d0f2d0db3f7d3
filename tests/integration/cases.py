"""Runs several test cases in one Python process, so that they share one
start-up: importing TensorFlow, PyTorch and RETURNN costs about 5 s of the
6 s a light case takes on its own (measured on the 2-core CI machine);
PyTorch only where a file of the group uses it.

    python cases.py NAME=FILE[:ARGS] ...

Each NAME=FILE[:ARGS] is one case (NAME is what the output calls it): with
ARGS a single word X and FILE defining test_X, test_X() runs; with other
ARGS, FILE's main(*ARGS) (the files with `# ctest-cases:` lines); without
ARGS, every test_* function of FILE, in order (the returnn_common files),
or main() where it has none.
Every case runs even when one before it failed; each prints one line, ok or
FAIL with its traceback above it, and the exit status is 1 if any failed.
tests/CMakeLists.txt makes the groups (`# ctest-group: N` in a file).
"""

import importlib.util
import os
import re
import sys
import time
import traceback

_modules = {}


def _import_torch_first(argv):
    """torch and its compiler before TensorFlow, whichever file of a group
    comes first, where a file of the group uses torch: both register LLVM's
    options, and in the other order the process aborts ("Option ...
    registered more than once"). A group of TF cases only does without
    (2.5 s of CPU each)."""
    for spec in argv:
        path = spec.partition("=")[2].partition(":")[0]
        with open(path) as f:
            if re.search(r"^\s*(import torch|from torch|import torch_probe|from torch_probe)", f.read(), re.M):
                import torch  # noqa: F401
                import torch._dynamo  # noqa: F401
                return


def _module(path):
    if path not in _modules:
        stem = os.path.splitext(os.path.basename(path))[0]
        spec = importlib.util.spec_from_file_location(stem, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[stem] = module
        spec.loader.exec_module(module)
        _modules[path] = module
    return _modules[path]


def _reset_returnn():
    """What one case leaves in RETURNN's globals that the next must not see
    (only TF networks mind, and they come with returnn_probe)."""
    probe = sys.modules.get("returnn_probe")
    if probe is not None:
        probe.reset_batch_dim()


def _calls(name, path, args):
    """[(name, function)] that the case NAME=PATH:ARGS runs."""
    module = _module(path)
    tests = [(name + "." + k, v) for k, v in vars(module).items() if k.startswith("test_") and callable(v)]
    if not args and tests:
        return tests
    if len(args) == 1 and callable(getattr(module, "test_" + args[0], None)):
        return [(name, getattr(module, "test_" + args[0]))]
    return [(name, lambda: module.main(*args))]


def main(argv):
    _import_torch_first(argv)
    failed, count = [], 0
    for spec in argv:
        name, _, rest = spec.partition("=")
        path, _, args = rest.partition(":")
        try:
            calls = _calls(name, path, args.split())
        except Exception:  # noqa: BLE001: an import error fails the cases of that file
            traceback.print_exc()
            print("FAIL %s (could not load %s)" % (name, path), flush=True)
            failed.append(name)
            continue
        for case, fn in calls:
            count += 1
            start = time.time()
            try:
                try:
                    fn()
                except SystemExit as exc:
                    if exc.code not in (None, 0):
                        raise
                print("ok   %s (%.1f s)" % (case, time.time() - start), flush=True)
            except (Exception, SystemExit):  # noqa: BLE001: every failure is reported, then the next case runs
                traceback.print_exc()
                print("FAIL %s (%.1f s)" % (case, time.time() - start), flush=True)
                failed.append(case)
            finally:
                _reset_returnn()
    print("%d of %d cases passed%s" % (count - len(failed), count, "; failed: " + " ".join(failed) if failed else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
