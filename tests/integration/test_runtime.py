"""The embedded runtime's own behaviour (runtime/retc_runtime.py), without
RETURNN: Ctrl-C ends the process even where the interrupted code never
returns (a KeyboardInterrupt raised while a lock is taken can leave RETURNN's
clean-up waiting for a thread forever): after STOP_TIMEOUT_S, one line on
the user's stderr (also while fd 2 writes to the run's log, as in retc) and
in the log, and exit 130; the same for SIGTERM (a cluster's scheduler), exit 143.
And the venv hook (runtime/retc_venv_hook.py, imported at every start of the
venv's Python): TensorFlow starts without Keras and scikit-learn, which still
import at their first use. And a torch training never imports TorchDynamo
(torch.optim's wrappers would, 1.2 s). And TensorBoard's event files of one
second in one log directory (RETURNN's TF engine writes every training epoch
of a process into one) are files of their own. And the torch runner keeps freed
memory in the heap for the next step (no page faults at every step). And the
venv hook loads retc_mkl_cpu.so before torch, and MKL's matmuls ask it.

Run alone as `python test_runtime.py NAME`.
"""

import os
import subprocess
import sys
import tempfile
import time

RUNTIME = os.path.join(os.environ["RETC_SOURCE_DIR"], "runtime")

STUCK = r"""
import os, signal, sys, threading
sys.path.insert(0, sys.argv[1])
import retc_runtime

retc_runtime.STOP_TIMEOUT_S = 1
lock = threading.Lock()
lock.acquire()


def stuck():
    try:
        os.kill(os.getpid(), int(sys.argv[3]))
        threading.Event().wait(30)
    except KeyboardInterrupt:
        print("interrupted; now stuck", flush=True)
        lock.acquire()  # as a clean-up joining a thread that waits for a lock this thread holds


retc_runtime.stuck = stuck
# As retc's call_logged runs it: fd 2 writes to the run's log, the user's stderr aside.
retc_runtime.USER_STDERR_FD = os.dup(2)
log = os.open(sys.argv[2], os.O_WRONLY | os.O_CREAT | os.O_APPEND)
os.dup2(log, 2)
retc_runtime.run_logged("stuck", sys.argv[2])
"""


def _stuck_after(signum, name):
    with tempfile.TemporaryDirectory() as tmp:
        start = time.time()
        r = subprocess.run([sys.executable, "-c", STUCK, RUNTIME, os.path.join(tmp, "err.log"), str(signum)],
                           capture_output=True, text=True, timeout=60)
        took = time.time() - start
        with open(os.path.join(tmp, "err.log")) as f:
            logged = f.read()
    line = "retc: error: RETURNN did not stop within 1 s of %s: interrupted\n" % name
    assert r.returncode == 128 + signum, (r.returncode, r.stdout, r.stderr)
    assert r.stdout == "interrupted; now stuck\n", r.stdout
    assert r.stderr == line, r.stderr  # the user's stderr, though fd 2 wrote to the log
    assert logged.endswith(line), logged
    assert took < 20, took
    print("%s, then stuck: exit %d after %.1f s, one line on stderr" % (name, r.returncode, took))


def test_interrupt_exits_when_stuck():
    _stuck_after(2, "Ctrl-C (SIGINT)")


def test_sigterm_exits_when_stuck():
    _stuck_after(15, "SIGTERM")


TF_START = r"""
import sys
sys.path.insert(0, sys.argv[1])
import retc_venv_hook  # the source tree's, not the copy tools/setup.sh put into the venv
sys.path.append(sys.argv[2])  # -S: the venv's packages without its .pth files
import tensorflow as tf
assert "keras" not in sys.modules and "sklearn" not in sys.modules, "Keras imported with TensorFlow"
assert "keras.src.optimizers" not in sys.modules, "the refusal outlived TensorFlow's start"
optimizer = tf.keras.optimizers.Adam  # Keras at its first use, through TensorFlow's lazy loader
assert optimizer.__module__ == "keras.src.optimizers.adam", optimizer.__module__
assert "sklearn" not in sys.modules, "scikit-learn imported while Keras started"
import sklearn  # afterwards as usual (librosa's features)
import returnn.tf.native_op
assert tf.test.is_built_with_cuda() or returnn.tf.native_op.OpMaker.with_cuda is False, "native ops with CUDA"
print("TensorFlow %s started without Keras; tf.keras, then scikit-learn %s imported after" % (
    tf.__version__, sklearn.__version__))
"""


def test_tensorflow_starts_without_keras():
    import sysconfig

    r = subprocess.run([sys.executable, "-S", "-c", TF_START, RUNTIME, sysconfig.get_paths()["purelib"]],
                       capture_output=True, text=True,
                       timeout=120, env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2"))
    assert r.returncode == 0, r.stdout + r.stderr
    print(r.stdout.strip())


TORCH_TRAIN = r"""
import os, sys
sys.path.insert(0, sys.argv[1])
import retc_runtime
retc_runtime.train(sys.argv[2], 0)
assert os.path.exists(sys.argv[3]), "no checkpoint " + sys.argv[3]
assert "torch._dynamo" not in sys.modules, "a torch training imported torch._dynamo"
print("a torch training (12ax, one epoch, RETURNN's Adam) without torch._dynamo")
"""


def test_torch_training_without_dynamo():
    with tempfile.TemporaryDirectory() as tmp:
        config = os.path.join(tmp, "12ax.config")
        subprocess.run([os.environ["RETC"], "compile", "12ax", "--backend", "torch", "--epochs", "1",
                        "--set", "train_seqs=100", "--model-dir", os.path.join(tmp, "model"), "-o", config],
                       check=True)
        r = subprocess.run([sys.executable, "-c", TORCH_TRAIN, RUNTIME, config,
                            os.path.join(tmp, "model", "network.001.pt")],
                           capture_output=True, text=True, timeout=300, cwd=tmp)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    print(r.stdout.strip().splitlines()[-1])


TENSORBOARD_SECOND = r"""
import glob, os, sys, time
sys.path.insert(0, sys.argv[1])
import retc_runtime
import tensorflow as tf
from tensorflow.compat.v1.summary import FileWriter
from tensorflow.compat.v1.train import summary_iterator

retc_runtime._tensorboard_files_unique()
tf.compat.v1.disable_eager_execution()  # as in RETURNN's TF engine
for attempt in range(10):  # three writers opened within one second
    logdir = os.path.join(sys.argv[2], str(attempt))
    os.makedirs(logdir)
    for i in range(3):
        w = FileWriter(logdir)
        w.add_summary(tf.compat.v1.Summary(value=[tf.compat.v1.Summary.Value(tag="w%d" % i, simple_value=i)]))
        w.close()
    files = sorted(glob.glob(os.path.join(logdir, "events.out.tfevents.*")))
    if len({os.path.basename(f).split(".")[3] for f in files}) == 1:
        break
else:
    raise AssertionError("no three writers within one second in 10 tries")
tags = sorted(v.tag for f in files for e in summary_iterator(f) for v in e.summary.value)
assert len(files) == 3 and tags == ["w0", "w1", "w2"], (files, tags)
print("3 writers in one second: %s, each with its events" % ", ".join(os.path.basename(f) for f in files))
"""


def test_tensorboard_files_of_one_second():
    with tempfile.TemporaryDirectory() as tmp:
        r = subprocess.run([sys.executable, "-c", TENSORBOARD_SECOND, RUNTIME, tmp], capture_output=True,
                           text=True, timeout=120, env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2"))
    assert r.returncode == 0, r.stdout + r.stderr
    print(r.stdout.strip().splitlines()[-1])


FREED_MEMORY = r"""
import os, resource, subprocess, sys
sys.path.insert(0, sys.argv[1])
import torch


def faults_per_step():  # a step's 40 tensors of 4 MiB (40,960 pages), freed at its end
    def step():
        ts = [torch.empty(1 << 20).fill_(1.0) for _ in range(40)]
        del ts
    for _ in range(3):
        step()
    r0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(20):
        step()
    return (resource.getrusage(resource.RUSAGE_SELF).ru_minflt - r0) / 20


if sys.argv[2] == "child":
    print(faults_per_step())
    sys.exit()
before = faults_per_step()
import retc_runtime

retc_runtime._keep_freed_memory()
after = faults_per_step()
rss = lambda: int(open("/proc/self/statm").read().split()[1]) * os.sysconf("SC_PAGE_SIZE") >> 20
kept = rss()
retc_runtime._give_back_freed_memory()  # as run_logged does when the run ends
given = kept - rss()
child = float(subprocess.run([sys.executable, "-c", sys.argv[3], sys.argv[1], "child"], capture_output=True,
                             text=True, check=True).stdout)
print("%.0f %.0f %.0f %d %s" % (before, after, child, given, os.environ["GLIBC_TUNABLES"]))
"""


def test_freed_memory_kept():
    """The torch runner keeps freed memory in the heap (_keep_freed_memory): a step's
    tensors of 4 MiB fault their pages in once, not at every step; in this process and in
    the processes it starts (torchrun's ranks: GLIBC_TUNABLES); a malloc tunable the user
    set stays as it was; and the kept memory goes back to the OS when the run ends."""
    for user, want in [("", "glibc.malloc.trim_threshold=1073741824:glibc.malloc.mmap_threshold=33554432"),
                       ("glibc.malloc.trim_threshold=0", "glibc.malloc.trim_threshold=0:"
                                                         "glibc.malloc.mmap_threshold=33554432")]:
        env = dict(os.environ, GLIBC_TUNABLES=user) if user else {
            k: v for k, v in os.environ.items() if k != "GLIBC_TUNABLES"}
        r = subprocess.run([sys.executable, "-c", FREED_MEMORY, RUNTIME, "parent", FREED_MEMORY], capture_output=True,
                           text=True, timeout=120, env=env)
        assert r.returncode == 0, r.stdout + r.stderr
        before, after, child, given, tunables = r.stdout.split()
        assert tunables == want, (tunables, want)
        # Without it, glibc's own thresholds gave 40,928 in some processes of this machine
        # and 0 in others (whether its heap grew in place, it seems), so `before` is only shown.
        if not user:
            assert float(after) < 400 and float(child) < 400 and int(given) >= 100, r.stdout
            print("page faults per step of 40,960 pages: %s before, %s after, %s in a process it started; "
                  "%s MiB given back when the run ended" % (before, after, child, given))


MKL_CPU = r"""
import ctypes, sys
import torch

loaded = sorted({l.split()[-1] for l in open("/proc/self/maps") if l.rstrip().endswith("/retc_mkl_cpu.so")})
if sys.argv[1] == "off":
    assert not loaded, loaded
    sys.exit()
assert loaded, "torch started without retc_mkl_cpu.so"
torch.manual_seed(0)
a, b = torch.randn(300, 512), torch.randn(512, 700)
c = torch.mm(a, b)  # MKL's sgemm
checks = ctypes.CDLL(loaded[0]).retc_mkl_cpu_checks()
assert checks > 0, "MKL never asked retc_mkl_cpu.so which CPU this is"
ref = torch.mm(a.double(), b.double())
err = ((c.double() - ref).abs().max() / ref.abs().max()).item()
assert err < 1e-5, err
print("%s: MKL asked it %d times; a 300 x 512 x 700 sgemm within %.1e of float64" % (loaded[0], checks, err))
"""


def test_torch_mkl_kernels_by_cpu_features():
    """The venv hook loads retc_mkl_cpu.so (runtime/torch/mkl_cpu.c) before torch starts
    (a fresh process of the venv's Python, as retc's runtime and torchrun's ranks start), and
    MKL's sgemm in torch's libraries asks it whether to use its kernels for the CPU's features;
    the product stays right. RETC_MKL_VENDOR_CHECK=1: not loaded."""
    r = subprocess.run([sys.executable, "-c", MKL_CPU, "on"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    print(r.stdout.strip())
    r = subprocess.run([sys.executable, "-c", MKL_CPU, "off"], capture_output=True, text=True, timeout=120,
                       env=dict(os.environ, RETC_MKL_VENDOR_CHECK="1"))
    assert r.returncode == 0, r.stdout + r.stderr
    print("RETC_MKL_VENDOR_CHECK=1: not loaded")


if __name__ == "__main__":
    globals()["test_" + sys.argv[1]]()
