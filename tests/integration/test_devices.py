"""Devices: nothing in retc forces CPU or GPU. `retc compile` writes RETURNN's
`device` only when asked (`--device cpu|gpu`; auto, the default, leaves the
choice to RETURNN); `--device gpu` on a command that runs RETURNN where the
backend has no GPU is a one-line error before anything is written, and
tools/gpu_check.sh stops at once with "no GPU"; and
nothing in retc's runtime or config turns CUDA off for the torch engine: with
`torch.cuda.is_available()` patched to True (as on a GPU node) and the device
forced to cpu, conformer-ctc's torch train step runs, its CTC error's edit
distance through RETURNN's native op built with CUDA (nvcc, where this machine
has it; the first run compiles it, then RETURNN's cache has it).
"""
# ctest-group: 3  (cases per process: tests/integration/cases.py)

import os
import subprocess
import sys
import tempfile

RETC = os.environ["RETC"]


def run(*args):
    return subprocess.run([RETC] + list(args), capture_output=True, text=True)


def device_lines(text):
    return [line for line in text.splitlines() if line.startswith("device")]


def test_device_entries():
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "c.config")
        for backend in ("tf", "torch"):
            for flags, want in (([], []), (["--device", "auto"], []),
                                (["--device", "cpu"], ['device = "cpu"']),
                                (["--device", "gpu"], ['device = "gpu"'])):
                r = run("compile", "conformer-ctc", "--backend", backend, "-o", out, *flags)
                assert r.returncode == 0, r.stderr
                with open(out) as f:
                    got = device_lines(f.read())
                assert got == want, (backend, flags, got)
        r = run("compile", "12ax", "--device", "tpu", "-o", out)
        assert r.returncode == 2, r
        assert r.stderr == ("retc: error: --device needs auto, cpu or gpu, got 'tpu' "
                            "(see 'retc --help')\n"), r.stderr
    print("ok: no device in the config unless asked; --device cpu|gpu written as asked")


def test_gpu_refused_before_writing():
    import torch

    import glob

    probe_logs = sorted(glob.glob(os.path.join(tempfile.gettempdir(), "retc-device-probe-*.log")))
    with tempfile.TemporaryDirectory() as tmp:
        work = os.path.join(tmp, "work")
        r = run("train", "12ax", "--backend", "torch", "--device", "gpu", "--workdir", work)
        if torch.cuda.is_available():
            # A GPU machine: the device is fine (training itself is tools/gpu_check.sh's).
            r = run("eval", "12ax", "--backend", "torch", "--device", "gpu", "--workdir", work)
            assert "no torch checkpoint" in r.stderr, r.stderr
            print("ok: a GPU here; --device gpu is accepted")
            return
        assert r.returncode == 1, r
        assert len(r.stderr.splitlines()) == 1, r.stderr
        assert r.stderr.startswith("retc: error: --device gpu: torch sees no CUDA GPU on this machine"), r.stderr
        assert not os.path.exists(work), os.listdir(tmp)
        r = run("train", "12ax", "--device", "gpu", "--workdir", work)
        assert r.returncode == 1 and len(r.stderr.splitlines()) == 1, r
        assert "is built without CUDA (tensorflow-cpu)" in r.stderr, r.stderr
        assert not os.path.exists(work), os.listdir(tmp)
        r = run("search", "conformer-ctc", "--backend", "torch", "--device", "gpu", "--workdir", work,
                "-o", os.path.join(tmp, "hyps.py"))
        assert r.returncode == 1 and "torch sees no CUDA GPU" in r.stderr, r
        assert sorted(os.listdir(tmp)) == [], os.listdir(tmp)
        assert sorted(glob.glob(os.path.join(tempfile.gettempdir(), "retc-device-probe-*.log"))) == probe_logs
        script = os.path.join(os.environ["RETC_SOURCE_DIR"], "tools", "gpu_check.sh")
        r = subprocess.run(["bash", script], capture_output=True, text=True, timeout=60)
        assert r.returncode == 1, r
        assert r.stderr == "gpu_check: no GPU on this machine (nvidia-smi lists none): nothing to check\n", r.stderr
    print("ok: --device gpu without a GPU: one line, nothing written (train on both targets, search); "
          "tools/gpu_check.sh: 'no GPU' at once")


PATCHED = r"""
import os, sys
import torch
torch.cuda.is_available = lambda: True  # as on a GPU node
sys.path.insert(0, sys.argv[1])
import retc_runtime
from returnn.torch.util.native_op_code_compiler import CudaEnv

assert "DISABLE_CUDA" not in os.environ, "something turned CUDA off"
variables, losses, errors = retc_runtime.check_torch(sys.argv[2])
assert [name for name, _ in errors] == ["ctc_error"], errors
assert CudaEnv.get_instance().is_available(), "RETURNN found no CUDA for its native ops"
print("ctc_error computed with RETURNN's native edit distance, CUDA at", CudaEnv.get_instance().cuda_path)
"""


def test_cuda_not_forced_off():
    with tempfile.TemporaryDirectory() as tmp:
        config = os.path.join(tmp, "returnn.config")
        r = run("compile", "conformer-ctc", "--backend", "torch", "--device", "cpu", "-o", config)
        assert r.returncode == 0, r.stderr
        with open(config) as f:
            assert "DISABLE_CUDA" not in f.read()
        env = dict(os.environ)
        env.pop("DISABLE_CUDA", None)
        runtime = os.path.join(os.environ["RETC_SOURCE_DIR"], "runtime")
        r = subprocess.run([sys.executable, "-c", PATCHED, runtime, config], capture_output=True,
                           text=True, env=env, cwd=tmp)
        assert r.returncode == 0, (r.stdout[-3000:], r.stderr[-3000:])
        print(r.stdout.strip().splitlines()[-1])
    print("ok: torch.cuda.is_available() True, device cpu: the edit-distance path works, CUDA not turned off")


if __name__ == "__main__":
    globals()["test_" + sys.argv[1]]()
