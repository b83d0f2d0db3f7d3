"""Copied into retc's venv by tools/setup.sh, with a .pth line that imports it at every start
of the venv's Python (retc's embedded runtime, `python -m returnn`, torchrun's workers, the
tests).

RETURNN's TF native ops (NativeLstm2 and the other OpMaker ops) decide whether to build CUDA
kernels by looking for nvcc (CudaEnv), not by asking TensorFlow; with a TensorFlow built
without CUDA (the pinned tensorflow-cpu) and nvcc on PATH, their compilation then fails.
When `returnn.tf.native_op` is imported and TensorFlow is not a CUDA build, this makes those
ops CPU-only (OpMaker.with_cuda = False). Nothing else changes: no DISABLE_CUDA, so RETURNN's
torch engine and its native ops (the CTC error's edit distance) find CUDA on a GPU machine,
and a CUDA build of TensorFlow (tools/setup.sh --gpu) builds its kernels as RETURNN does.

It also keeps `import tensorflow` from importing Keras: TensorFlow 2.21 ends its `__init__`
with an eager `import keras.src.optimizers` (for Keras' registrations in TF's SavedModel
registry), which imports all of Keras 3. While TensorFlow's `__init__` runs, that module is
refused as if it were not installed (TensorFlow expects that and goes on); afterwards it imports
as usual, and `tf.keras` imports Keras at its first use (TensorFlow's lazy loader). RETURNN's TF
engine does that at once (returnn.tf.updater subclasses a Keras learning-rate schedule), so its
runs (train, eval, forward, search) import Keras as before; `retc check` and
`convert-checkpoint` no longer do: on the 2-core machine `import tensorflow` took 2.37 s of CPU
instead of 2.95, `retc check 12ax` 2.53 s instead of 2.91, `retc convert-checkpoint 12ax --from
tf` 3.81 s instead of 4.26 (means of 3 and 5 runs each, alternating).
And wherever Keras starts, scikit-learn is refused meanwhile: Keras' scikit-learn wrappers
import it when it is installed (librosa brings it), nothing retc or RETURNN runs uses them, and
it took 0.7 s of each TF engine's start (`import returnn.tf.engine`: 4.35 s with it, 3.68 s
without; means of 5 runs each, alternating). Afterwards it imports as usual (librosa's features).
And before torch starts, it loads retc_mkl_cpu.so (runtime/torch/mkl_cpu.c), so that MKL,
torch's CPU matmuls, picks its kernels by the CPU's features also on AMD's CPUs (a Conformer's
torch training step on the 2-core AMD EPYC 0.78x).
Beside it lies retc_tf_ops.so (runtime/tf/weight_norm_ops.cc): the TF configs' weight norm
finds it by this module's place (_retc_weight_norm_ops in the config) and loads it itself.
"""

import sys

_TARGET = "returnn.tf.native_op"


def _cpu_only_if_tf_has_no_cuda(module):
    from returnn.tf.util.basic import is_tf_cuda_build

    if not is_tf_cuda_build():
        module.OpMaker.with_cuda = False


_KERAS_PRELOAD = "keras.src.optimizers"  # what tensorflow/__init__.py imports at its end


def _wrap_exec_module(spec, around):
    """spec, its loader's exec_module(module) replaced by around(exec_module, module)."""
    loader = spec.loader
    if loader is None or not hasattr(loader, "exec_module"):
        return spec
    exec_module = loader.exec_module
    loader.exec_module = lambda module: around(exec_module, module)
    return spec


def _after_native_op(exec_module, module):
    exec_module(module)
    _cpu_only_if_tf_has_no_cuda(module)


def _tensorflow_without_keras(exec_module, module):
    """Runs tensorflow/__init__.py with Keras' eager load refused (None in sys.modules: an
    ImportError, which TensorFlow catches), and lifts the refusal when it ends."""
    refused = _KERAS_PRELOAD not in sys.modules
    if refused:
        sys.modules[_KERAS_PRELOAD] = None
    try:
        exec_module(module)
    finally:
        if refused and sys.modules.get(_KERAS_PRELOAD, 0) is None:
            del sys.modules[_KERAS_PRELOAD]


_MKL_CPU = "retc_mkl_cpu.so"  # runtime/torch/mkl_cpu.c, built beside this file by tools/setup.sh


def _torch_with_mkl_kernels(exec_module, module):
    """Runs torch/__init__.py after loading retc_mkl_cpu.so (RTLD_GLOBAL), so that MKL in
    torch's libraries picks its kernels by the CPU's features on AMD's CPUs too (the file
    says why and what it gains). RETC_MKL_VENDOR_CHECK=1 leaves MKL as it is."""
    import os

    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), _MKL_CPU)
    if os.environ.get("RETC_MKL_VENDOR_CHECK") != "1" and os.path.exists(path):
        import ctypes

        ctypes.CDLL(path, mode=os.RTLD_GLOBAL)
    exec_module(module)


_WRAPPED = {_TARGET: _after_native_op, "tensorflow": _tensorflow_without_keras, "torch": _torch_with_mkl_kernels}


def _initializing(name):
    module = sys.modules.get(name)
    return module is not None and getattr(getattr(module, "__spec__", None), "_initializing", False)


class _Finder:
    """A meta path finder that only wraps the loaders of `returnn.tf.native_op`, of
    `tensorflow` and of `torch` (the top-level packages), and refuses scikit-learn while
    Keras or TensorFlow starts."""

    def find_spec(self, name, path, target=None):
        if name == "sklearn" and (_initializing("keras") or _initializing("tensorflow")):
            raise ImportError("retc: scikit-learn is not imported while Keras starts", name=name)
        around = _WRAPPED.get(name)
        if around is None:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(name, path, target)
            if spec is not None:
                return _wrap_exec_module(spec, around)
        return None


if not any(isinstance(f, _Finder) for f in sys.meta_path):
    sys.meta_path.insert(0, _Finder())


def _die_with_parent():
    """A process that multiprocessing spawned for retc (RETURNN's torch data-loader workers;
    retc's runtime sets RETC_DIE_WITH_PARENT): SIGKILL from the kernel when its parent dies,
    however it dies (kill -9 of a training included), so that no worker outlives it. Forked
    ones get the same from retc's runtime (os.register_at_fork)."""
    import os

    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, 9, 0, 0, 0)  # PR_SET_PDEATHSIG, SIGKILL
    except (OSError, AttributeError):
        return
    if os.getppid() == 1:  # the parent died before the line above
        os._exit(1)


if "--multiprocessing-fork" in sys.argv and __import__("os").environ.get("RETC_DIE_WITH_PARENT"):
    _die_with_parent()
