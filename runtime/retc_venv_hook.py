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

It also keeps `import tensorflow` from importing scikit-learn: TensorFlow 2.21 imports Keras 3
at its start, whose scikit-learn wrappers import scikit-learn when it is installed (librosa
brings it). Nothing retc or RETURNN runs uses those wrappers, and the import took 0.7 s of each
TF start (`import returnn.tf.engine`: 4.35 s without, 3.68 s with this; means of 5 runs each,
alternating, on the 2-core machine).
While TensorFlow is being imported, `import sklearn` fails as if it were not installed (Keras
expects that); afterwards it imports as usual (librosa's features).
"""

import sys

_TARGET = "returnn.tf.native_op"


def _cpu_only_if_tf_has_no_cuda(module):
    from returnn.tf.util.basic import is_tf_cuda_build

    if not is_tf_cuda_build():
        module.OpMaker.with_cuda = False


def _importing_tensorflow():
    tf = sys.modules.get("tensorflow")
    return tf is not None and getattr(getattr(tf, "__spec__", None), "_initializing", False)


class _NativeOpFinder:
    """A meta path finder that only wraps the loader of `returnn.tf.native_op` (and refuses
    scikit-learn while TensorFlow starts)."""

    def find_spec(self, name, path, target=None):
        if name == "sklearn" and _importing_tensorflow():
            raise ImportError("retc: scikit-learn is not imported while TensorFlow starts", name=name)
        if name != _TARGET:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(name, path, target)
            if spec is not None:
                break
        else:
            return None
        loader = spec.loader
        if loader is None or not hasattr(loader, "exec_module"):
            return spec
        exec_module = loader.exec_module

        def exec_and_patch(module):
            exec_module(module)
            _cpu_only_if_tf_has_no_cuda(module)

        loader.exec_module = exec_and_patch
        return spec


if not any(isinstance(f, _NativeOpFinder) for f in sys.meta_path):
    sys.meta_path.insert(0, _NativeOpFinder())


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
