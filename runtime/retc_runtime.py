"""retc's side of the embedded interpreter: RETURNN check and train.

Compiled into the retc binary (cmake/embed_text.cmake) and executed as the
module `retc_runtime`. The C++ side calls `check` and `train`; Python
exceptions propagate and become absl::Status there.
"""

import os
import sys
import time

# Nothing here turns CUDA off: RETURNN picks the device (the config's `device`,
# else a GPU where there is one). The TF target's native ops on tensorflow-cpu
# are the venv hook's (runtime/retc_venv_hook.py).
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")


def _die_with_parent():
    """In a process forked from retc's (RETURNN's torch data-loader workers): ask the
    kernel for SIGKILL when the parent dies, however it dies (kill -9 included), so that
    no worker outlives a killed training; a parent already gone ends the child now."""
    import ctypes
    import signal

    parent = _die_with_parent.parent
    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGKILL), 0, 0, 0)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        return
    if os.getppid() != parent:
        os._exit(1)


# RETURNN's TF network constructs each layer from inside the construction of
# the layers that read it: the depth of Python's recursion grows with the
# model's longest chain of layers. The tests' deep-chain model (400 residual
# steps, 814 layers in its net dict, each step's two on its longest chain)
# fails in RecursionError with Python's default limit of 1,000 and with 1,500,
# and constructs with 2,500. Python 3.11 runs Python-to-Python calls without C
# stack, so the limit can be high.
RECURSION_LIMIT = 100_000
if sys.getrecursionlimit() < RECURSION_LIMIT:
    sys.setrecursionlimit(RECURSION_LIMIT)


def _remember_parent():
    _die_with_parent.parent = os.getpid()
    # multiprocessing's scratch folder (pymp-*: the sockets through which a torch
    # data-loader worker hands its tensors over), made here before the fork so that
    # the children use this one: the parent removes it when it exits. Made in a
    # worker instead, it stays behind whenever the worker is killed (its parent's
    # error ends it with SIGKILL: _die_with_parent); seen in the faults test.
    import multiprocessing.util

    multiprocessing.util.get_temp_dir()


if sys.platform.startswith("linux") and not getattr(os, "_retc_fork_hook", False):
    os._retc_fork_hook = True
    os.environ["RETC_DIE_WITH_PARENT"] = "1"  # spawned children: the venv hook does the same
    os.register_at_fork(before=_remember_parent, after_in_child=_die_with_parent)


# The signal that stopped the run: SIGINT (Ctrl-C) or SIGTERM (what a cluster's
# scheduler sends, `kill PID`); both end RETURNN as Ctrl-C does (the finished
# epochs' checkpoints stay, the unfinished epoch is not saved), and the process
# exits with 128 + the signal (130, 143).
_stop_signal = 0
# After the signal, RETURNN gets this long to stop before the process exits
# anyway: a KeyboardInterrupt raised while a thread's lock is taken (TF's data
# provider and the training loop share a queue and a condition) can leave
# RETURNN's clean-up joining a thread that never ends; seen once, in a CI run
# of the interrupt test (every thread in a lock wait, for 645 s).
STOP_TIMEOUT_S = 20
# The user's stderr while file descriptor 2 writes to a run's log (retc's call_logged
# sets it around each run): where _exit_interrupted's one line goes. None: fd 2.
USER_STDERR_FD = None


def _signal_name(signum):
    import signal

    return {signal.SIGINT: "Ctrl-C (SIGINT)", signal.SIGTERM: "SIGTERM"}.get(signum, "signal %d" % signum)


def _exit_interrupted():
    """The last resort after the signal: the log flushed, one line, exit 128 + the
    signal (the checkpoints of finished epochs are on disk; the unfinished one is
    not saved either way)."""
    import threading

    flush = threading.Thread(target=_flush, daemon=True)  # a lock it needs may be the stuck one
    flush.start()
    flush.join(2)
    line = b"retc: error: RETURNN did not stop within %d s of %s: interrupted\n" % (
        STOP_TIMEOUT_S, _signal_name(_stop_signal).encode())
    for fd in [2] if USER_STDERR_FD is None else [USER_STDERR_FD, 2]:  # and the run's log
        try:
            os.write(fd, line)
        except OSError:
            pass
    os._exit(128 + _stop_signal)


def _on_stop_signal(signum, frame):
    """Ctrl-C or SIGTERM: remember it (RETURNN turns the KeyboardInterrupt into
    sys.exit(1) after saving nothing of the unfinished epoch), make sure the
    process ends (_exit_interrupted), then raise KeyboardInterrupt, to which
    RETURNN reacts on both engines."""
    global _stop_signal
    if not _stop_signal:
        import threading

        _stop_signal = signum
        timer = threading.Timer(STOP_TIMEOUT_S, _exit_interrupted)
        timer.daemon = True
        timer.start()
    raise KeyboardInterrupt


class Stopped(KeyboardInterrupt):
    """The run was stopped by a signal (`signum`): SIGINT or SIGTERM."""

    def __init__(self, signum):
        super().__init__(_signal_name(signum))
        self.signum = signum


def _enable_faulthandler():
    """faulthandler as RETURNN's init sets it up (tracebacks on a fatal fault, all
    threads' on SIGUSR1), but not on SIGTERM: RETURNN registers an all-thread dump
    there, and reading another thread's frames while it runs crashes now and then
    (a segfault in PyCode_Addr2Line; exit 139 instead of 143 in about half the TF
    runs stopped in an epoch). RETURNN leaves faulthandler alone once it is enabled."""
    import faulthandler
    import signal

    if not faulthandler.is_enabled():
        faulthandler.enable()
        faulthandler.register(signal.SIGUSR1, all_threads=True)


def run_logged(func_name, error_log, *args):
    """Calls `func_name(*args)` with Ctrl-C and SIGTERM handled (_on_stop_signal); on
    an exception, appends the full traceback to `error_log` and re-raises (as Stopped
    after a signal)."""
    import signal

    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        signal.signal(signal.SIGINT, _on_stop_signal)
    # The caller (retc's C++ side) restores its own SIGTERM handler afterwards.
    signal.signal(signal.SIGTERM, _on_stop_signal)
    _enable_faulthandler()
    try:
        return globals()[func_name](*args)
    except BaseException as exc:
        import traceback

        with open(error_log, "a") as f:
            f.write(traceback.format_exc())
        if _stop_signal:
            raise Stopped(_stop_signal) from exc
        raise
    finally:
        _flush()
        _remove_empty_faulthandler_dumps()
        _give_back_freed_memory()


class RetcError(Exception):
    """An error retc's runtime found itself: its message says all (error_line shows no
    type name)."""


class RunFailed(Exception):
    """RETURNN's TF runner failed and would sys.exit(1): raised instead, from the
    exception the runner caught (its run_exception), which error_line reports."""


def _exception_chain(exc):
    """`exc` and what it was raised from or while handling, outermost first."""
    chain = []
    while exc is not None and not any(exc is e for e in chain):
        chain.append(exc)
        exc = exc.__cause__ if exc.__cause__ is not None else (
            None if exc.__suppress_context__ else exc.__context__)
    return chain


def _is_wrapper(exc):
    """An exception that says only that something else failed: sys.exit(1) after a
    caught error, Ctrl-C turned into an exit, RunFailed."""
    return isinstance(exc, (SystemExit, KeyboardInterrupt, RunFailed))


def _tf_op_message(exc):
    """The lines of a TensorFlow op error that say what happened, without TF's
    "Graph execution error", the Python stack of the op's definition and the
    node lists; with the failing op's name."""
    lines = []
    skip_stack = False
    for line in str(getattr(exc, "message", None) or exc).splitlines():
        text = line.strip()
        if not text or text.startswith(("Graph execution error", "[[{{node", "[[", "Original stack trace",
                                        "Errors may have originated", "Additional GRPC error")):
            continue
        if text.startswith("Detected at node") or text.startswith("Detected in the"):
            skip_stack = True
            continue
        if skip_stack and (line[:1] in " \t" or text.startswith(("File ", "<"))):
            continue
        skip_stack = False
        lines.append(text)
    text = " ".join(lines) if lines else str(exc).strip()
    op = getattr(exc, "op", None)
    name = getattr(op, "name", None)
    if name and name not in text:
        text += " (op %s)" % name
    return text


def _assertion_site(exc):
    """Where an assert without a message failed: 'FILE:LINE: SOURCE'."""
    import linecache
    import traceback

    frames = traceback.extract_tb(exc.__traceback__)
    if not frames:
        return "assertion failed"
    f = frames[-1]
    source = (f.line or linecache.getline(f.filename, f.lineno)).strip()
    return "%s:%d: %s" % (os.path.basename(f.filename), f.lineno, source or "assertion failed")


MAX_ERROR_CHARS = 600


def error_line(exc):
    """One line that names the cause of `exc`: the innermost exception of its chain
    (`raise ... from`, or raised while handling another) that is more than a wrapper
    (sys.exit(1) after RETURNN caught the error, Ctrl-C, RunFailed), or retc's own
    diagnosis (RetcError) of what it caught, as "Type: message": TF's op errors reduced to their message, OS errors with the
    file they were about, an assert without a message with its file, line and
    source. The full traceback is in the log."""
    chain = _exception_chain(exc)
    causes = [e for e in chain if not _is_wrapper(e)]
    own = [e for e in causes if isinstance(e, RetcError)]  # retc's diagnosis of what it caught
    cause = own[0] if own else causes[-1] if causes else chain[0]
    type_name = type(cause).__name__
    if isinstance(cause, SystemExit):
        return "RETURNN exited with status %s (its log says why)" % (cause.code,)
    if isinstance(cause, OSError) and cause.strerror:
        where = [repr(f) for f in (cause.filename, cause.filename2) if f is not None]
        text = "%s%s" % (cause.strerror, (": " + " -> ".join(where)) if where else "")
    elif type(cause).__module__.startswith("tensorflow") and hasattr(cause, "op"):
        text = _tf_op_message(cause)
    elif isinstance(cause, AssertionError) and not str(cause).strip():
        text = _assertion_site(cause)
    else:
        # The first line: RETURNN's torch engine appends the step, the data and the
        # module call stack to an exception's message, lines after its own.
        text = str(cause).strip()
        if isinstance(cause, KeyError) and len(cause.args) == 1:
            text = "%r" % (cause.args[0],)
        text = next((line.strip() for line in text.splitlines() if line.strip()), "")
    if len(text) > MAX_ERROR_CHARS:
        text = text[:MAX_ERROR_CHARS - 3] + "..."
    if isinstance(cause, RetcError):
        return text
    return "%s: %s" % (type_name, text) if text else type_name


def _remove_empty_faulthandler_dumps():
    """RETURNN's torch data loader workers each open faulthandler_dump.<pid>.log in the
    working directory, and RETURNN removes the empty ones at interpreter exit, which the
    embedded interpreter does not reach: remove them here."""
    import glob

    for filename in glob.glob(os.path.join(os.getcwd(), "faulthandler_dump.*.log")):
        try:
            if os.path.getsize(filename) == 0:
                os.remove(filename)
        except OSError:
            pass


def _flush():
    for f in (sys.stdout, sys.stderr):
        try:
            f.flush()
        except Exception:
            pass


def _random_values(datas, rng, batch=3, max_time=7):
    """Random values for extern data (a list of (key, Tensor template), the
    main input first) and the lengths of their dynamic dims: the first dynamic
    dim (the input's time) is long, later ones (target sequences of CTC or a
    decoder) short, so that subsampled inputs can still align with them.
    Returns ({key: array}, {dim: lengths})."""
    values, sizes = {}, {}
    for key, data in datas:
        shape = []
        for tag in data.dim_tags:
            if tag.is_batch_dim():
                shape.append(batch)
            elif tag.dimension is not None:
                shape.append(tag.dimension)
            else:
                if tag not in sizes:
                    top = max_time if not sizes else 2
                    lens = rng.randint(min(top, max_time - 2), top + 1, size=(batch,)).astype("int32")
                    lens[0] = top
                    sizes[tag] = lens
                shape.append(int(sizes[tag].max()))
        if data.sparse_dim is not None:
            values[key] = rng.randint(0, data.sparse_dim.dimension, size=shape).astype(data.dtype)
        elif data.dtype == "bool":
            # Random masks (about half true), so that what a mask selects is exercised.
            values[key] = rng.randint(0, 2, size=shape).astype("bool")
        else:
            values[key] = rng.normal(size=shape).astype(data.dtype)
    return values, sizes


def _is_random_state(variable):
    """A random layer's generator state (RETURNN keeps it with the layer's params; fresh random
    numbers advance it): not a param of the model."""
    return variable.name.endswith("/random_generator/StateVar:0")


def _check_batch(config):
    """The random batch of `retc check` (--batch B --time T, written into the check's
    config): (sequences, frames of the longest input), default (3, 7)."""
    return dict(batch=config.int("retc_check_batch", 3), max_time=config.int("retc_check_time", 7))


def _random_feed(net, rng, **batch):
    """A TF feed dict: random values for every extern data placeholder and its sequence
    lengths (`batch`: _random_values' sizes)."""
    keys = sorted(net.extern_data.data, key=lambda k: (k != net.extern_data.default_input, k))
    datas = [(k, net.extern_data.data[k]) for k in keys]
    values, sizes = _random_values(datas, rng, **batch)
    feed = {data.placeholder: values[key] for key, data in datas}
    for tag, lens in sizes.items():
        if tag.dyn_size_ext is not None and tag.dyn_size_ext.placeholder is not None:
            feed[tag.dyn_size_ext.placeholder] = lens
    return feed


def check(config_path):
    """Constructs the network of a config in RETURNN and runs one step on
    random data. Returns (variables, outputs): lists of (name, shape)."""
    import numpy
    from returnn.log import log
    from returnn.config import Config, set_global_config
    from returnn.util.basic import BehaviorVersion
    import returnn.tf.compat as tf_compat
    from returnn.tf.network import TFNetwork
    import tensorflow as tf

    _graph_optimizer_off()  # a bad RETC_TF_GRAPH_OPTIMIZER: before the network is built
    log.initialize(verbosity=[2])
    config = Config()
    config.load_file(config_path)
    set_global_config(config)
    BehaviorVersion.set(config.int("behavior_version", 0) or None)
    tf_compat.v1.disable_eager_execution()
    _fast_graph_mode_equality()
    with tf.Graph().as_default():
        tf_compat.v1.set_random_seed(config.int("random_seed", 42))
        net = TFNetwork(config=config, train_flag=True, eval_flag=True)
        net.construct_from_dict(config.typed_value("network"))
        variables = [(v.name, [int(d) for d in v.shape.as_list()]) for v in net.get_params_list()
                     if not _is_random_state(v)]
        fetches = {}
        for name, layer in sorted(net.layers.items()):
            if layer.is_output_layer() or name == "output":
                fetches[name] = layer.output.placeholder
        # A model without losses (forward only) has a total loss of plain 0.
        losses = net.get_total_loss()
        if not isinstance(losses, tf.Tensor):
            losses = tf.constant(float(losses))
        with tf_compat.v1.Session(config=tf_session_config()) as session:
            net.initialize_params(session)
            feed = _random_feed(net, numpy.random.RandomState(1), **_check_batch(config))
            values, loss_value = session.run((fetches, losses), feed_dict=feed)
        outputs = [(name, list(value.shape)) for name, value in sorted(values.items())]
        if not numpy.isfinite(loss_value):
            raise ValueError("total loss on random data is not finite: %r" % loss_value)
    _flush()
    return variables, outputs


def _fast_graph_mode_equality():
    """TF in graph mode (RETURNN's TF engine): `variable == other` is
    `variable is other` either way, but with TF's tensor equality on, TF asks
    for the eager context first, each time; RETURNN's updater compares
    variables in lists, 1.1 million times for the 369 of
    swb-conformer-hybrid-2021. Off: the same results without those lookups
    (its one-epoch run 52.5 -> 46.4 s here, measured one after the other)."""
    import tensorflow as tf

    tf.compat.v1.disable_tensor_equality()


def tf_session_config():
    """The ConfigProto of every TF session retc's runtime makes (RETURNN's engine's
    through _graph_optimizer_choice): TF's graph optimizer (grappler) off where
    RETC_TF_GRAPH_OPTIMIZER=off. Grappler rewrites each new graph a session runs before
    its first run: a training graph of 13k nodes (swb-conformer-hybrid-2021, 8 blocks
    of 64) took 9 s of a 32 s one-epoch run here; its steps ran about 7% faster for it
    (conformer-12x512 at 2 x 200). Off pays for short runs (the test suite sets it),
    not for training. With OMP_NUM_THREADS set, that many threads in each of TF's
    thread pools (_tf_threads_as_omp)."""
    from tensorflow.python.eager import context

    config = context.context().config  # a copy: TF's session config when none is given (threads)
    if _graph_optimizer_off():
        config.graph_options.rewrite_options.disable_meta_optimizer = True
    threads = _omp_num_threads()
    if threads:
        config.intra_op_parallelism_threads = config.inter_op_parallelism_threads = threads
    return config


def _omp_num_threads():
    """OMP_NUM_THREADS's count (its first, for a list), or None where it is unset or not a
    count. torch computes with that many threads; TF takes it for each of its two thread
    pools (_tf_threads_as_omp)."""
    try:
        threads = int(os.environ.get("OMP_NUM_THREADS", "").split(",")[0])
    except ValueError:
        return None
    return threads if threads > 0 else None


def _tf_threads_as_omp():
    """RETURNN's TF engine sizes its thread pools (intra-op and inter-op) from
    OMP_NUM_THREADS, but at least 2; torch uses exactly OMP_NUM_THREADS. With this, TF
    uses exactly that number too (where the config's tf_session_opts name none), as
    tf_session_config does for retc's own sessions: a job given one core (the test
    suite's OMP_NUM_THREADS=1, two jobs on 2 cores) then computes in one thread instead
    of two that wait for each other. digits-ctc, two epochs, two runs side by side on 2
    cores: 66.5-67.8 s each with 2 threads, 58.2-58.9 s with 1 (this machine).
    Installed once per process."""
    from returnn.tf.util import basic as tf_util

    setup = tf_util.setup_tf_thread_pools
    if getattr(setup, "retc_threads_as_omp", False):
        return

    def setup_tf_thread_pools(num_threads=None, log_file=None, tf_session_opts=None):
        setup(num_threads=num_threads or _omp_num_threads(), log_file=log_file, tf_session_opts=tf_session_opts)

    setup_tf_thread_pools.retc_threads_as_omp = True
    tf_util.setup_tf_thread_pools = setup_tf_thread_pools


def _graph_optimizer_off():
    """Whether RETC_TF_GRAPH_OPTIMIZER says off (on, the default, or off; else an error)."""
    value = os.environ.get("RETC_TF_GRAPH_OPTIMIZER", "on")
    if value not in ("on", "off"):
        raise RetcError("RETC_TF_GRAPH_OPTIMIZER must be on or off, not %r" % value)
    return value == "off"


def _graph_optimizer_choice():
    """RETURNN's TF engine makes its session from the config's tf_session_opts: with
    RETC_TF_GRAPH_OPTIMIZER=off (read when the session is made, as tf_session_config
    does), those with grappler off. Installed once per process."""
    _graph_optimizer_off()  # a bad value: before RETURNN starts
    from returnn.tf.engine import Engine

    make = Engine.make_tf_session
    if getattr(make, "retc_graph_optimizer_choice", False):
        return

    def make_tf_session(self):
        if _graph_optimizer_off():
            opts = dict(self.config.typed_value("tf_session_opts", {}) or {})
            graph = dict(opts.get("graph_options", {}))
            graph["rewrite_options"] = dict(graph.get("rewrite_options", {}), disable_meta_optimizer=True)
            opts["graph_options"] = graph
            self.config.typed_dict["tf_session_opts"] = opts
        make(self)

    make_tf_session.retc_graph_optimizer_choice = True
    Engine.make_tf_session = make_tf_session


def _prepare(config_path):
    """Before RETURNN runs a config: on the TF backend, _fast_graph_mode_equality(),
    _graph_optimizer_choice() and more; on both, _remember_batches(). Returns the config
    (loaded, not made global)."""
    from returnn.config import Config

    config = Config()
    config.load_file(config_path)
    # A run killed after its last save's renames, before it removed that save's (then
    # empty) scratch directory, left it beside the checkpoints; a resumed run that finds
    # every epoch saved saves nothing, so it goes here, before RETURNN starts.
    model = config.value("model", "")
    if model and os.path.isdir(os.path.dirname(os.path.abspath(model))):
        _remove_killed_scratch(os.path.dirname(os.path.abspath(model)))
    _remember_batches("torch" if config.value("backend", "") == "torch" else "tf")
    if config.value("backend", "") != "torch":
        _fast_graph_mode_equality()
        _graph_optimizer_choice()
        _tf_threads_as_omp()
        _raise_runner_errors()
        _atomic_tf_saves()
        _tensorboard_graph_when_changed()
        _tensorboard_files_unique()
        _meta_graph_when_changed()
    else:
        _atomic_torch_saves()
        _optimizers_without_dynamo()
        _keep_freed_memory()
    return config


# glibc's mallopt parameters (malloc.h) and the tunables of the same settings.
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3
_KEEP_TRIM, _KEEP_MMAP = 1 << 30, 32 << 20


def _keep_freed_memory():
    """torch's CPU tensors come from malloc, freed when their last use ends. glibc
    serves a block over its mmap threshold (128 KiB at first, raised to a freed
    block's size, at most 32 MiB) by a fresh mmap, and gives the heap's free top
    back to the OS beyond twice that: each training step faulted its pages in anew
    (a 12-block Conformer at 2 x 200 on CPU: 79,000 page faults and 136 ms of
    system time per step). Here a freed block stays in the heap for the next step
    up to 1 GiB, and blocks up to 32 MiB come from the heap: 211 faults, 1.5 ms;
    the step 597 -> 521 ms (two processes). The peak memory is the same: what the
    heap keeps is what the step will ask for again. Set in this process (mallopt)
    and, as GLIBC_TUNABLES, for the processes it starts (torchrun's ranks); a
    setting the user's GLIBC_TUNABLES names stays the user's. When the run ends,
    _give_back_freed_memory (a warm server keeps no step's memory while it waits).
    Installed once per process; nothing where the C library is not glibc."""
    global _kept_freed_memory
    if _kept_freed_memory is not None:
        return
    _kept_freed_memory = False
    import ctypes
    import ctypes.util

    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallopt = libc.mallopt
        libc.malloc_trim
    except (OSError, AttributeError):
        return
    _kept_freed_memory = libc
    tunables = [t for t in os.environ.get("GLIBC_TUNABLES", "").split(":") if t]
    for name, param, value in (("glibc.malloc.trim_threshold", _M_TRIM_THRESHOLD, _KEEP_TRIM),
                               ("glibc.malloc.mmap_threshold", _M_MMAP_THRESHOLD, _KEEP_MMAP)):
        if not any(t.split("=", 1)[0] == name for t in tunables):
            mallopt(param, value)
            tunables.append("%s=%d" % (name, value))
    os.environ["GLIBC_TUNABLES"] = ":".join(tunables)


_kept_freed_memory = None  # glibc, once _keep_freed_memory ran (False: not glibc)


def _give_back_freed_memory():
    """The heap's free memory back to the OS (malloc_trim), after a run that kept it."""
    if _kept_freed_memory:
        _kept_freed_memory.malloc_trim(0)


def _remove_killed_scratch(directory):
    """Removes the scratch directories (".NAME.retc-tmp-PID") that runs killed meanwhile
    left in `directory`: those whose PID no longer runs (as retc's C++ ScratchDir does)."""
    import re
    import shutil

    for f in os.listdir(directory):
        m = re.fullmatch(r"\..+\.retc-tmp-(\d+)", f)
        if not m:
            continue
        try:
            os.kill(int(m.group(1)), 0)
        except ProcessLookupError:
            shutil.rmtree(os.path.join(directory, f), ignore_errors=True)
        except OSError:
            pass


def _saved_in_scratch(filename, save, last):
    """Runs save(path) with `path` in a directory of its own beside `filename`
    (".NAME.retc-tmp-PID"), then renames what it wrote there (NAME.*) into place, the
    files for which last(file) holds last; a failure while the disk is full names the
    file (_naming_full_disk). The scratch directory goes on every path; those of killed
    runs go at the next save or the next run's start (_prepare)."""
    import shutil

    filename = os.path.abspath(filename)
    directory, name = os.path.split(filename)
    scratch = os.path.join(directory, ".%s.retc-tmp-%d" % (name, os.getpid()))
    _remove_killed_scratch(directory)
    shutil.rmtree(scratch, ignore_errors=True)
    os.makedirs(scratch)
    try:
        with _naming_full_disk(filename):
            save(os.path.join(scratch, name))
            done = sorted(f for f in os.listdir(scratch) if f.startswith(name + "."))
            for f in sorted(done, key=last):
                os.replace(os.path.join(scratch, f), os.path.join(directory, f))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _tensorboard_graph_when_changed():
    """RETURNN's TF engine opens a TensorBoard log directory for each run over a dataset
    (every epoch's training and every dev eval: MODEL_DIR/train-*, dev-N-*) and writes
    the whole graph into each, serialized op by op in Python (`as_graph_def(add_shapes=
    True)`). From one epoch to the next the graph is the same. With this, a log
    directory gets the graph only where the graph changed since the last one written (a
    new one for a pretraining stage, or ops added): the first training epoch's and,
    where the first checkpoint's save ops came after it, the first dev eval's. The
    scalar summaries are written as before. Installed once per process."""
    from tensorflow.python.framework import ops
    from tensorflow.python.summary.writer.writer import SummaryToEventTransformer

    add_graph = SummaryToEventTransformer.add_graph
    if getattr(add_graph, "_retc", False):
        return
    last = {}

    def add_graph_when_changed(self, graph, global_step=None, graph_def=None):
        if isinstance(graph, ops.Graph) and graph_def is None:
            if last.get("graph") is graph and last.get("version") == graph.version:
                return
            last.update(graph=graph, version=graph.version)
        add_graph(self, graph, global_step=global_step, graph_def=graph_def)

    add_graph_when_changed._retc = True
    SummaryToEventTransformer.add_graph = add_graph_when_changed


def _tensorboard_files_unique():
    """An event file's name holds the second its writer opened it in
    (events.out.tfevents.SECONDS.HOST), and RETURNN's TF engine writes every training
    epoch of a process into one log directory (MODEL_DIR/train-PROCESS_START): two epochs
    that started in the same second wrote one file, the second epoch's overwriting the
    first's events (and with them the graph). With this, a writer whose second's file is
    there already gets a suffix (".2", ".3", ...: TensorBoard reads every file with
    "tfevents" in its name, in the order of their names). Installed once per process."""
    import glob
    import time
    from tensorflow.python.summary.writer.event_file_writer import EventFileWriter

    init = EventFileWriter.__init__
    if getattr(init, "_retc", False):
        return

    def init_unique(self, logdir, max_queue=10, flush_secs=120, filename_suffix=None):
        if not filename_suffix and os.path.isdir(logdir):
            # A second that ends between this look and the writer's open makes a new name.
            taken = glob.glob(os.path.join(glob.escape(logdir), "events.out.tfevents.%010d.*" % int(time.time())))
            if taken:
                filename_suffix = ".%d" % (len(taken) + 1)
        init(self, logdir, max_queue=max_queue, flush_secs=flush_secs, filename_suffix=filename_suffix)

    init_unique._retc = True
    EventFileWriter.__init__ = init_unique


def _meta_graph_when_changed():
    """Every epoch's TF checkpoint has a .meta, the MetaGraphDef (RETURNN's TF engine
    loads a checkpoint only with it), serialized from the whole graph op by op in Python.
    From one epoch to the next it is the same. With this, where the graph (the same
    object, no ops added), the saver and the options are those of the last .meta written,
    the next one is written from its bytes (a graph collection changed without new ops
    would not be seen). Without this, TF's ten .meta files of conformer-transducer's 10
    epochs were byte for byte the same. Installed once per process."""
    from tensorflow.python.framework import ops
    from tensorflow.python.training.saver import Saver

    export = Saver.export_meta_graph
    if getattr(export, "_retc", False):
        return
    last = {}

    def export_meta_graph(self, filename=None, *args, **kwargs):
        graph = ops.get_default_graph()
        key = (self, graph, graph.version, args, sorted(kwargs.items()))
        if filename and last.get("key") == key:
            with open(filename, "wb") as f:
                f.write(last["bytes"])
            return last["meta"]
        meta = export(self, filename, *args, **kwargs)
        last.clear()
        if filename and not kwargs.get("as_text") and not args:
            with open(filename, "rb") as f:
                last.update(key=key, meta=meta, bytes=f.read())
        return meta

    export_meta_graph._retc = True
    Saver.export_meta_graph = export_meta_graph


def _atomic_tf_saves():
    """RETURNN's TF engine saves an epoch's checkpoint as three files (.data, .index,
    .meta) in place: a crash or a full disk mid-save left an epoch with an .index (so a
    resumed training skips it) but no .meta (so eval and `load` fail on it). Saved in a
    directory of its own beside them instead, then renamed into place, the .index last:
    an epoch has its .index only when all three are complete."""
    from returnn.tf.network import TFNetwork

    save = TFNetwork.save_params_to_file
    if getattr(save, "_retc", False):
        return

    def save_params_to_file(self, filename, session):
        _saved_in_scratch(filename, lambda path: save(self, path, session), last=lambda f: f.endswith(".index"))

    save_params_to_file._retc = True
    TFNetwork.save_params_to_file = save_params_to_file


def _atomic_torch_saves():
    """RETURNN's torch engine saves an epoch's model (.pt) and then its optimizer state
    (.opt.pt), each atomically but not together: a crash or a full disk between them left
    the model, so that a resumed training skipped the epoch and went on without the
    optimizer's state (and a .tmp_write file that no later save removed). Both are saved in
    a directory of their own and renamed into place, the model last: an epoch has its .pt
    only when its optimizer state is there too."""
    from returnn.torch.engine import Engine

    save_model, save_optimizer = Engine._save_model, Engine._save_optimizer
    if getattr(save_model, "_retc", False):
        return

    def save_epoch(self):  # at the end of an epoch, RETURNN calls this and then _save_optimizer
        if not self._do_save():
            return
        epoch_filename = self.get_epoch_model_filename

        def save(path):
            # This epoch's files go to `path`; the optimizer's clean-up of older epochs'
            # states still finds them in place.
            self.get_epoch_model_filename = lambda epoch=None: (
                path if epoch in (None, self.epoch) else epoch_filename(epoch=epoch))
            try:
                save_model(self)
                save_optimizer(self)
            finally:
                del self.get_epoch_model_filename

        _saved_in_scratch(epoch_filename(), save, last=lambda f: not f.endswith(".opt.pt"))

    save_epoch._retc = True
    Engine._save_model = save_epoch
    Engine._save_optimizer = lambda self: None  # saved with the model


def _optimizers_without_dynamo():
    """torch.optim imports torch._dynamo (1.2 s of a torch training's start here) only to
    keep TorchDynamo from tracing into its optimizers: torch._disable_dynamo's wrappers of
    Optimizer.add_param_group, zero_grad, state_dict and load_state_dict import it at their
    first call, and each optimizer's step (_use_grad_for_differentiable) at every call, for
    a graph break. Nothing in RETURNN's torch engine or a retc config compiles with
    TorchDynamo, so those wrappers are no-ops here: the first four call their function
    (torch's own cache of a disabled function, set to the function itself), and each step
    sets the grad mode as _use_grad does, without the import or the graph breaks. Where
    torch's wrappers are not as described (another torch), nothing changes. 12ax, 2 epochs
    on torch in process: 4.0-5.4 s of CPU against 5.9-6.8 (3 runs each, alternating), the
    same params bit for bit."""
    import functools

    import torch

    if getattr(torch.optim.Optimizer, "_retc_without_dynamo", False):
        return
    for name in ("add_param_group", "zero_grad", "state_dict", "load_state_dict"):
        inner = getattr(torch.optim.Optimizer, name)
        fn = getattr(inner, "__wrapped__", None)
        if fn is not None and inner.__code__.co_name == "inner" and "__dynamo_disable" in inner.__code__.co_consts:
            fn.__dynamo_disable = fn

    def grad_mode_step(step):
        @functools.wraps(step)
        def use_grad(self, *args, **kwargs):
            previous = torch.is_grad_enabled()
            try:
                torch.set_grad_enabled(self.defaults["differentiable"])
                return step(self, *args, **kwargs)
            finally:
                torch.set_grad_enabled(previous)

        return use_grad

    for cls in vars(torch.optim).values():
        step = vars(cls).get("step") if isinstance(cls, type) and issubclass(cls, torch.optim.Optimizer) else None
        if hasattr(step, "__wrapped__") and step.__code__.co_name == "_use_grad":
            cls.step = grad_mode_step(step.__wrapped__)
    torch.optim.Optimizer._retc_without_dynamo = True


def _raise_runner_errors():
    """RETURNN's TF runner catches the exception of a failed step, logs it and
    then calls sys.exit(1): the exception is raised instead (as RunFailed from it),
    so that error_line names it. After Ctrl-C or SIGTERM as before."""
    from returnn.tf.engine import Runner

    if getattr(Runner.exit_due_to_error, "_retc", False):
        return
    exit_due_to_error = Runner.exit_due_to_error

    def raise_run_exception(self):
        exc = self.run_exception
        if exc is not None and not isinstance(exc, KeyboardInterrupt):
            raise RunFailed("RETURNN's runner failed") from exc
        exit_due_to_error(self)

    raise_run_exception._retc = True
    Runner.exit_due_to_error = raise_run_exception


def device_problem(backend, device):
    """Why `device` ("cpu", "gpu"; "" for RETURNN's choice) cannot be used by `backend`
    ("tf", "torch") on this machine, in one line; "" if it can. Asked before any file
    is written."""
    if device != "gpu":
        return ""
    if backend == "torch":
        import torch

        if not torch.cuda.is_available():
            return "--device gpu: torch sees no CUDA GPU on this machine (torch %s, built for CUDA %s)" % (
                torch.__version__, torch.version.cuda)
        return ""
    import tensorflow as tf

    if not tf.test.is_built_with_cuda():
        return ("--device gpu: the TensorFlow installed here (%s) is built without CUDA "
                "(tensorflow-cpu); make the GPU venv (tools/setup.sh --gpu) or use --backend torch"
                % tf.__version__)
    if not tf.config.list_physical_devices("GPU"):
        return "--device gpu: TensorFlow sees no GPU on this machine"
    return ""


def gpu_count(backend):
    """How many GPUs `backend` sees here (RETURNN's choice of device when the config
    sets none)."""
    if backend == "torch":
        import torch

        return torch.cuda.device_count() if torch.cuda.is_available() else 0
    import tensorflow as tf

    return len(tf.config.list_physical_devices("GPU")) if tf.test.is_built_with_cuda() else 0


def _scores(lrc):
    """(last epoch, [(key, value)] of its scores) from RETURNN's learning-rate control: the
    last epoch with scores (a `learning_rates` list gives later epochs entries in advance)."""
    scored = [e for e, d in lrc.epoch_data.items() if d.error]
    if not scored:
        raise RuntimeError("RETURNN recorded no epoch")
    last = max(scored)
    return last, sorted((k, float(v)) for k, v in (lrc.epoch_data[last].error or {}).items())


def _hms(seconds):
    seconds = int(round(seconds))
    return "%d:%02d:%02d" % (seconds // 3600, seconds // 60 % 60, seconds % 60)


class Progress:
    """retc's progress during a training epoch, on this process's stdout (not
    through RETURNN's log, so RETURNN's log file is as RETURNN writes it): the
    step, sequences and frames per second, the current loss, the elapsed and
    the estimated time of the epoch. On a terminal one line redrawn in place
    with a bar (at most every `tty_interval` seconds, erased when the epoch
    ends); otherwise a plain line at most every `interval` seconds, without
    control characters. Fed by the engines' per-step report hooks
    (install_progress)."""

    def __init__(self, interval=10.0, tty_interval=0.5, out=None):
        self.out = out or sys.stdout
        try:
            self.tty = self.out.isatty()
        except Exception:
            self.tty = False
        self.interval = tty_interval if self.tty else interval
        self.epoch = 0
        self.drawn = False
        self.start = self.last = 0.0
        self.seqs = self.frames = 0

    def epoch_start(self, epoch):
        import time

        self.epoch = epoch
        self.start = self.last = time.monotonic()
        self.seqs = self.frames = 0

    def step(self, step, losses, complete, seqs, frames):
        """After `step` (from 0) of the epoch: `losses` {name: value} (the first is shown),
        `complete` the part of the epoch done (None if unknown), this step's `seqs` and
        `frames` (the input's summed lengths)."""
        import time

        now = time.monotonic()
        self.seqs += seqs
        self.frames += frames
        if now - self.last < self.interval:
            return
        self.last = now
        elapsed = now - self.start
        parts = ["epoch %d step %d" % (self.epoch, step + 1)]
        if elapsed > 0:
            parts.append("%.1f seqs/s %.0f frames/s" % (self.seqs / elapsed, self.frames / elapsed))
        if losses:
            name, value = next(iter(losses.items()))
            parts.append("%s %.4g" % (name, value))
        parts.append("elapsed %s" % _hms(elapsed))
        if complete and complete > 0:
            parts.append("eta %s" % _hms(elapsed / complete - elapsed))
        text = ", ".join(parts)
        if self.tty:
            done = min(max(complete or 0.0, 0.0), 1.0)
            bar = "#" * int(done * 20) + "." * (20 - int(done * 20))
            self.out.write("\r[%s] %3d%% %s\x1b[K" % (bar, int(done * 100), text))
            self.drawn = True
        else:
            self.out.write("retc: progress: %s\n" % text)
        self.out.flush()

    def epoch_end(self):
        if self.drawn:
            self.out.write("\r\x1b[K")
            self.out.flush()
            self.drawn = False


class _BarAwareStream:
    """sys.stdout while a Progress may draw its bar: any other text (RETURNN's log
    lines) erases the bar first, so that it never shares a line with them."""

    def __init__(self, stream, progress):
        self._stream = stream
        self._progress = progress

    def write(self, text):
        if text and self._progress.drawn:
            self._progress.epoch_end()
        return self._stream.write(text)

    def __getattr__(self, name):
        return getattr(self._stream, name)


def _frames(seq_lens):
    """The frames of a batch from {key: summed lengths}: the input's ("data")."""
    if not seq_lens:
        return 0
    return int(seq_lens.get("data", next(iter(seq_lens.values()))))


def install_progress(engine, progress):
    """Feeds `progress` from RETURNN's per-step report of training steps: torch's
    `_print_process` (module function; RETURNN's batch-size info turned on for it, which
    RETURNN prints at log verbosity 5 only) and TF's `Runner._print_process` (the
    step's sequence lengths from its fetches); and wraps the engine's train_epoch."""
    train_epoch = engine.train_epoch

    def train_epoch_with_progress(*args, **kwargs):
        progress.epoch_start(engine.epoch)
        try:
            return train_epoch(*args, **kwargs)
        finally:
            progress.epoch_end()

    engine.train_epoch = train_epoch_with_progress
    if type(engine).__module__.startswith("returnn.torch"):
        import returnn.torch.engine as torch_engine

        report = torch_engine._print_process
        if getattr(report, "_retc_progress", None) is not None:
            report = report._retc_progress
        engine._log_batch_size = True

        def print_process(report_prefix, *, step, eval_info=None, batch_size_info=None,
                          complete_frac=None, **kwargs):
            if report_prefix.endswith(" train"):
                info = batch_size_info or {}
                sums = {k[len("sum_size:"):]: v for k, v in info.items() if k.startswith("sum_size:")}
                losses = {k: v for k, v in (eval_info or {}).items() if not k.endswith("error")}
                progress.step(step, losses, complete_frac if complete_frac not in (None, -1) else None,
                              int(info.get("num_seqs", 0)), _frames(sums))
            return report(report_prefix, step=step, eval_info=eval_info, batch_size_info=batch_size_info,
                          complete_frac=complete_frac, **kwargs)

        print_process._retc_progress = report
        torch_engine._print_process = print_process
    else:
        from returnn.tf.engine import Runner

        report = getattr(Runner._print_process, "_retc_progress", Runner._print_process)
        collect = getattr(Runner._collect_eval_info, "_retc_progress", Runner._collect_eval_info)

        def collect_eval_info(self, fetches_results):
            self._retc_sizes = {k[len("size:"):-2]: v for k, v in fetches_results.items()
                                if k.startswith("size:") and k.endswith(":0")}
            return collect(self, fetches_results)

        def print_process(self, report_prefix, step, step_duration, eval_info):
            if self._should_train:
                sizes = getattr(self, "_retc_sizes", {})
                lens = sizes.get("data", next(iter(sizes.values()), None))
                seqs = len(lens) if lens is not None else 0
                losses = {k: v for k, v in (eval_info or {}).items() if k.startswith("cost:")}
                progress.step(step, losses, self.data_provider.get_complete_frac() or None, seqs,
                              _frames({k: int(v.sum()) for k, v in sizes.items()}))
            return report(self, report_prefix, step, step_duration, eval_info)

        collect_eval_info._retc_progress = collect
        print_process._retc_progress = report
        Runner._collect_eval_info = collect_eval_info
        Runner._print_process = print_process


def train(config_path, progress_interval=10.0):
    """Runs RETURNN's training task on a config in this process, with progress
    lines (Progress; none if `progress_interval` is 0).
    Returns (last_epoch, [(key, value)] of that epoch's scores)."""
    import returnn.__main__ as rnn

    _prepare(config_path)
    progress, restore = _stdout_progress(progress_interval)
    try:
        rnn.init(config_filename=config_path, extra_greeting="retc train, in process.")
        if progress is not None:
            install_progress(rnn.engine, progress)
        with _naming_nonfinite():
            rnn.execute_main_task()
        last, scores = _scores(rnn.engine.learning_rate_control)
        rnn.finalize()
        return last, scores
    finally:
        restore()
        _flush()


def _stdout_progress(interval):
    """(a Progress on stdout, or None if `interval` is 0; a function that undoes what this
    did). On a terminal, sys.stdout erases the bar before other text: set before RETURNN's
    log takes sys.stdout."""
    stdout = sys.stdout
    progress = Progress(interval=interval, out=stdout) if interval > 0 else None
    if progress is not None and progress.tty:
        sys.stdout = _BarAwareStream(stdout, progress)

    def restore():
        if progress is not None:
            progress.epoch_end()
        sys.stdout = stdout

    return progress, restore


def _torchrun_worker(config_path, interval):
    """One rank of train_distributed: `python -m returnn CONFIG` (RETURNN's main), with
    retc's progress lines on rank 0."""
    import returnn.__main__ as rnn

    progress, restore = _stdout_progress(interval if os.environ.get("RANK", "0") == "0" else 0)
    execute_main_task = rnn.execute_main_task

    def execute_with_progress():
        if progress is not None:
            install_progress(rnn.engine, progress)
        execute_main_task()

    rnn.execute_main_task = execute_with_progress
    _enable_faulthandler()
    _optimizers_without_dynamo()
    _keep_freed_memory()  # GLIBC_TUNABLES from train_distributed did too, at the rank's start
    try:
        rnn.main([sys.argv[0], config_path])
    finally:
        restore()


def train_distributed(config_path, nproc, nnodes=1, node_rank=0, master="", progress_interval=10.0):
    """RETURNN's training task on the torch engine in several processes: torch's
    own launcher (torchrun) runs RETURNN's main on CONFIG per rank, `nproc` on
    this machine: standalone, or as node `node_rank` of `nnodes` that meet at
    `master` (HOST:PORT of node 0; torch's static rendezvous). The ranks run this
    module as a script, written next to the config as retc-torchrun-worker.py
    (_torchrun_worker: rank 0 prints the progress lines). The config has
    `torch_distributed` (gloo on CPU, nccl on GPU). Rank 0 saves the checkpoints
    and evaluates. Returns as `train` does, read from RETURNN's learning-rate
    file; on another node than 0 (no file there), (0, [])."""
    import signal
    import subprocess

    from returnn.learning_rate_control import load_learning_rate_control_from_config

    config = _prepare(config_path)
    python = os.path.join(sys.prefix, "bin", "python")
    cmd = [python, "-m", "torch.distributed.run"]
    if nnodes > 1:
        host, port = master.rsplit(":", 1)
        cmd += ["--nnodes=%d" % nnodes, "--node-rank=%d" % node_rank,
                "--master-addr=%s" % host, "--master-port=%s" % port]
    else:
        cmd += ["--standalone"]
    worker = os.path.join(os.path.dirname(os.path.abspath(config_path)), "retc-torchrun-worker.py")
    with open(worker + ".tmp", "w") as f:
        f.write(SOURCE)
    os.replace(worker + ".tmp", worker)
    cmd += ["--nproc-per-node=%d" % nproc, worker, config_path, str(progress_interval)]
    where = " on node %d of %d" % (node_rank, nnodes) if nnodes > 1 else ""
    print("retc: %d processes%s: %s" % (nproc, where, " ".join(cmd)))
    _flush()
    proc = subprocess.Popen(cmd)
    try:
        rc = proc.wait()
    except KeyboardInterrupt:
        proc.send_signal(_stop_signal or signal.SIGINT)  # torchrun passes it on to the ranks
        proc.wait()
        raise
    if rc != 0:
        if rc in (130, 143, -signal.SIGINT, -signal.SIGTERM):
            raise KeyboardInterrupt
        raise RuntimeError("torchrun exited with status %d (RETURNN's log above)" % rc)
    if node_rank > 0:
        return 0, []
    return _scores(load_learning_rate_control_from_config(config))


def check_torch(config_path):
    """The torch target's check: builds the model with the config's
    get_model (its params and initial values), runs train_step on random
    data, the backward pass included. Returns (variables, losses, errors):
    lists of (name, shape); the variables are the state_dict's, errors the
    losses marked as_error (the frame error)."""
    import numpy
    import torch
    from returnn.log import log
    from returnn.config import Config, set_global_config
    from returnn.util.basic import BehaviorVersion
    import returnn.frontend as rf
    from returnn.tensor import TensorDict
    from returnn.torch.data import extern_data as extern_data_util

    log.initialize(verbosity=[2])
    config = Config()
    config.load_file(config_path)
    set_global_config(config)
    BehaviorVersion.set(config.int("behavior_version", 0) or None)
    rf.select_backend_torch()
    rf.set_random_seed(config.int("random_seed", 42))
    model = config.typed_value("get_model")(epoch=1, step=0)
    template = TensorDict()
    template.update(config.typed_value("extern_data"), auto_convert=True)
    keys = sorted(template.data, key=lambda k: (k != "data", k))
    datas = [(k, template.data[k]) for k in keys]
    values, sizes = _random_values(datas, numpy.random.RandomState(1), **_check_batch(config))
    raw = {key: torch.tensor(value) for key, value in values.items()}
    for key, data in datas:
        for tag in data.dims:
            if tag in sizes:
                raw[key + ":seq_len"] = torch.tensor(sizes[tag])
    extern_data = extern_data_util.raw_dict_to_extern_data(
        raw, extern_data_template=template, device="cpu", with_eval_targets=True)
    rf.init_train_step_run_ctx(train_flag=True, step=0, epoch=1)
    config.typed_value("train_step")(model=model, extern_data=extern_data)
    ctx = rf.get_run_ctx()
    losses = [(name, list(loss.loss.raw_tensor.shape)) for name, loss in sorted(ctx.losses.items())
              if not loss.as_error]
    errors = [(name, list(loss.loss.raw_tensor.shape)) for name, loss in sorted(ctx.losses.items())
              if loss.as_error]
    total = ctx.total_loss() if ctx.losses else None  # a forward-only model has none
    if isinstance(total, rf.Tensor):
        value = total.raw_tensor
        if not torch.isfinite(value):
            raise ValueError("total loss on random data is not finite: %r" % float(value))
        value.backward()
    variables = [(name, [int(d) for d in p.raw_tensor.shape]) for name, p in model.named_parameters()]
    _flush()
    return variables, losses, errors


ONNX_OPSET = 17


def export_onnx(config_path, mapping, allow_extra, out_path):
    """ONNX export of a torch forward config's model (`retc export`), as RETURNN's
    tools/torch_export_to_onnx.py does it: the model from get_model with the
    checkpoint in `load` (checked against `mapping` first), forward_step traced by
    torch.onnx.export on a random batch, in evaluation. Inputs: the data the step
    reads ("data" and its sizes "data:size0" (the batch), "data:size1" (the
    lengths), ..., int64); outputs: `model_outputs` by their marks' names with their
    sizes; the batch and dynamic axes dynamic. Written to `out_path`, then checked in
    ONNX Runtime (_check_onnx). Returns (inputs, outputs, opset, checks)."""
    import numpy
    import torch
    from returnn.log import log
    from returnn.config import Config, set_global_config
    from returnn.util.basic import BehaviorVersion, BackendEngine
    import returnn.frontend as rf
    from returnn.tensor import Tensor, TensorDict, batch_dim
    from returnn.torch.frontend.bridge import rf_module_to_pt_module
    from returnn.tensor.utils import tensor_dict_fill_random_numpy_
    from returnn.torch.data.tensor_utils import tensor_dict_numpy_to_torch_

    _check_checkpoint("torch", _prepare(config_path).value("load", ""), mapping, allow_extra)
    log.initialize(verbosity=[2])
    config = Config()
    config.load_file(config_path)
    set_global_config(config)
    BehaviorVersion.set(config.int("behavior_version", 0) or None)
    BackendEngine.select_engine(engine=BackendEngine.Torch)
    rf.select_backend_torch()
    rf.set_random_seed(config.int("random_seed", 42))
    model = config.typed_value("get_model")(epoch=1, step=0)
    pt_model = rf_module_to_pt_module(model)
    pt_model.load_state_dict(torch.load(config.value("load", ""), map_location="cpu")["model"])
    pt_model.eval()
    template = TensorDict()
    template.update(config.typed_value("extern_data"), auto_convert=True)
    # The inputs: the data the step reads (not a loss's targets).
    inputs = TensorDict({k: v for k, v in template.data.items() if v.available_for_inference})
    outputs = TensorDict()
    outputs.update(config.typed_value("model_outputs"), auto_convert=True)
    forward_step = config.typed_value("forward_step")

    def raw_names(tensors):
        names = []
        for key, t in tensors.data.items():
            names.append(key)
            names += ["%s:size%d" % (key, i) for i, d in enumerate(t.dims) if d.is_batch_dim() or d.is_dynamic()]
        return names

    class Forward(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.model = pt_model

        def forward(self, data):
            extern_data = inputs.copy_template()
            for t in extern_data.data.values():  # the sizes as int64 (see below)
                for d in t.dims:
                    if d.is_batch_dim():
                        d.dyn_size_ext = Tensor("batch", [], dtype="int64")
                    elif d.is_dynamic():
                        d.dyn_size_ext = Tensor(d.name, [batch_dim], dtype="int64")
            # A dim shared by inputs has its size under one name: the others' the same.
            sizes, data = {}, dict(data)
            for pass_ in range(2):
                for key, t in extern_data.data.items():
                    for i, d in enumerate(t.dims):
                        name = "%s:size%d" % (key, i)
                        if pass_ == 0 and name in data:
                            sizes.setdefault(d, data[name])
                        elif pass_ == 1 and name not in data and d in sizes:
                            data[name] = sizes[d]
            extern_data.assign_from_raw_tensor_dict_(data)
            rf.init_forward_step_run_ctx(expected_outputs=outputs)
            forward_step(model=model, extern_data=extern_data)
            ctx = rf.get_run_ctx()
            ctx.check_outputs_complete()
            got = ctx.outputs.as_raw_tensor_dict()
            return {k: got[k] for k in raw_names(outputs)}

    # The example batch (RETURNN's random fill; its sizes become dynamic axes).
    inputs.reset_content()
    tensor_dict_fill_random_numpy_(inputs, rnd=1)
    tensor_dict_numpy_to_torch_(inputs)
    raw = inputs.as_raw_tensor_dict()
    # The sizes as int64 inputs: rf builds shapes from dim values (the batch size, a
    # dynamic dim's longest length), which ONNX concatenates with its int64 constants.
    raw = {k: v.to(torch.int64) if ":size" in k else v for k, v in raw.items()}
    input_names = list(raw)  # RETURNN's (a dim shared by inputs: its size once)
    # Dynamic: the batch axis ("batch") and each dynamic axis (by its dim's name), in
    # the tensors and in the lengths ([batch]); the batch size is a scalar.
    dynamic_axes = {}
    for key, t in list(inputs.data.items()) + list(outputs.data.items()):
        dynamic_axes[key] = {i: "batch" if d.is_batch_dim() else d.name for i, d in enumerate(t.dims)
                             if d.is_dynamic() or d.is_batch_dim()}
        for i, d in enumerate(t.dims):
            if d.is_dynamic() and not d.is_batch_dim():
                dynamic_axes["%s:size%d" % (key, i)] = {0: "batch"}
    import warnings

    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore", torch.jit.TracerWarning)
        torch.onnx.export(Forward(), (raw, {}), out_path, input_names=input_names, output_names=raw_names(outputs),
                          dynamic_axes=dynamic_axes, opset_version=ONNX_OPSET, dynamo=False)
    _int_relu_as_max(out_path)
    checks = _check_onnx(out_path, Forward(), inputs, outputs, raw_names)
    _flush()
    return input_names, raw_names(outputs), ONNX_OPSET, checks


def _int_relu_as_max(path):
    """Each Relu of an integer tensor in the ONNX file at `path` as Max(x, 0): rf's dim
    arithmetic takes relu of lengths (a padded or convolved dim's), which ONNX allows on
    ints but ONNX Runtime implements for floats only."""
    import numpy
    import onnx
    from onnx import helper, numpy_helper

    model = onnx.load(path)
    typed = onnx.shape_inference.infer_shapes(model)
    elem = {v.name: v.type.tensor_type.elem_type
            for v in list(typed.graph.value_info) + list(typed.graph.input) + list(typed.graph.output)}
    ints = {onnx.TensorProto.INT32: "int32", onnx.TensorProto.INT64: "int64"}
    nodes, changed = [], False
    for n in model.graph.node:
        dtype = ints.get(elem.get(n.input[0])) if n.op_type == "Relu" else None
        if dtype is None:
            nodes.append(n)
            continue
        zero = n.name + "_zero"
        nodes.append(helper.make_node("Constant", [], [zero], value=numpy_helper.from_array(numpy.zeros((), dtype))))
        nodes.append(helper.make_node("Max", [n.input[0], zero], list(n.output), name=n.name))
        changed = True
    if changed:
        del model.graph.node[:]
        model.graph.node.extend(nodes)
        onnx.save(model, path)


def _check_onnx(path, forward, inputs, outputs, raw_names):
    """The exported file checked (onnx.checker) and run by ONNX Runtime on three random
    batches of other sizes than the traced example's (batch 1, 4 and 9; longest input
    5, 13 and 24 frames) against the torch forward: each output's sizes equal, its
    values within 1e-4 on every sequence's frames. Returns [(batch, frames, max |diff|)];
    raises naming the first output that differs (a size traced as a constant)."""
    import numpy
    import onnx
    import onnxruntime
    import torch
    from returnn.tensor import batch_dim
    from returnn.tensor.utils import tensor_dict_fill_random_numpy_

    onnx.checker.check_model(path)
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = 1
    options.log_severity_level = 3
    session = onnxruntime.InferenceSession(path, options, providers=["CPUExecutionProvider"])
    out_names = [o.name for o in session.get_outputs()]
    dynamic = [d for t in inputs.data.values() for d in t.dims if d.is_dynamic() and not d.is_batch_dim()]
    checks = []
    for seed, (batch, frames) in enumerate([(1, 5), (4, 13), (9, 24)]):
        inputs.reset_content()
        sizes = {batch_dim: batch}
        sizes.update({d: frames for d in dynamic})
        tensor_dict_fill_random_numpy_(inputs, rnd=seed + 7, dyn_dim_max_sizes=sizes,
                                       dyn_dim_min_sizes={d: 1 for d in dynamic})
        feed = {}
        for key, t in inputs.data.items():
            feed[key] = t.raw_tensor
            for i, d in enumerate(t.dims):
                if d.is_batch_dim():
                    feed["%s:size%d" % (key, i)] = numpy.array(batch, "int32")
                elif d.is_dynamic():
                    feed["%s:size%d" % (key, i)] = d.dyn_size_ext.raw_tensor
        types = {"tensor(int32)": "int32", "tensor(int64)": "int64", "tensor(float)": "float32"}
        feed = {i.name: numpy.asarray(feed[i.name]).astype(types[i.type]) for i in session.get_inputs()}
        got = dict(zip(out_names, session.run(None, feed)))
        with torch.no_grad():
            want = {k: v.numpy() for k, v in forward({k: torch.tensor(v) for k, v in feed.items()}).items()}
        worst = 0.0
        for key, t in outputs.data.items():
            mask = numpy.ones(want[key].shape, bool)
            for i, d in enumerate(t.dims):
                name = "%s:size%d" % (key, i)
                if name not in want:
                    continue
                if not numpy.array_equal(got[name], want[name]):
                    raise ValueError("ONNX export: the output %r's size %s is %s in ONNX Runtime, %s in torch (batch %d, "
                                     "%d frames): a size traced as a constant" % (key, name, got[name].tolist(),
                                                                                 want[name].tolist(), batch, frames))
                if not d.is_batch_dim() and want[name].ndim == 1:
                    shape = [1] * mask.ndim
                    shape[0], shape[i] = mask.shape[0], mask.shape[i]
                    valid = numpy.arange(mask.shape[i])[None, :] < want[name][:, None]
                    mask &= valid.reshape(shape)
            if got[key].shape != want[key].shape:
                raise ValueError("ONNX export: the output %r is %s in ONNX Runtime, %s in torch (batch %d, %d frames)"
                                 % (key, list(got[key].shape), list(want[key].shape), batch, frames))
            diff = numpy.abs(got[key].astype("float64") - want[key].astype("float64"))[mask]
            worst = max(worst, float(diff.max()) if diff.size else 0.0)
            if worst > 1e-4:
                raise ValueError("ONNX export: the output %r differs from torch's by %.3g (batch %d, %d frames)"
                                 % (key, worst, batch, frames))
        checks.append((batch, frames, worst))
    return checks


class MapRule:
    """A rule of a checkpoint map (import_checkpoint): retc's param name pattern, the
    other tool's name pattern, the ops that make the other layout retc's."""

    def __init__(self, where, retc, source, ops):
        import re

        self.where, self.retc, self.source, self.ops = where, retc, source, ops
        names = re.findall(r"\{(\w+)\}", retc)
        if sorted(names) != sorted(set(re.findall(r"\{(\w+)\}", source))) or len(set(names)) != len(names):
            raise RetcError("%s: the captures of %r and %r differ (each {name} once on each side)"
                            % (where, retc, source))
        pattern = ""
        for part in re.split(r"(\{\w+\})", retc):
            pattern += "(?P<%s>[^./]+)" % part[1:-1] if re.fullmatch(r"\{\w+\}", part) else re.escape(part)
        self.pattern = re.compile(pattern + "$")

    def source_name(self, name):
        m = self.pattern.match(name)
        if not m:
            return None
        out = self.source
        for k, v in m.groupdict().items():
            out = out.replace("{%s}" % k, v)
        return out


def parse_checkpoint_map(path):
    """A checkpoint map: one rule a line, `RETC_NAME SOURCE_NAME [OP ...]` (retc's name as
    torch keys it, `encoder.layers.0.ff1.weight`; a `{name}` capture matches one part of a
    name between dots or slashes and stands for the same text on the other side), `#`
    comments. OPs, applied in order to the source's value (`qkv_heads=H`: the last axis's
    [q | k | v] blocks with H heads inside each, as torch's MultiheadAttention has them,
    regrouped per head, RETURNN's fused layout): `transpose=P` (a permutation,
    e.g. 1,0), `reshape=S` (a shape, e.g. 512), `gates=ORDER` (the last axis's 4 equal
    blocks, in the source's gate order of i, f, g (cell input), o, to retc's LSTM order
    g, i, f, o: torch's LSTM is `gates=ifgo`), `scale=X`."""
    rules = []
    with open(path) as f:
        for number, line in enumerate(f, 1):
            words = line.split("#", 1)[0].split()
            if not words:
                continue
            where = "%s:%d" % (path, number)
            if len(words) < 2:
                raise RetcError("%s: a rule is RETC_NAME SOURCE_NAME [OP ...], got %r" % (where, line.strip()))
            ops = []
            for op in words[2:]:
                name, _, arg = op.partition("=")
                try:
                    if name in ("transpose", "reshape"):
                        value = [int(v) for v in arg.split(",")]
                    elif name == "gates":
                        if sorted(arg) != sorted("ifgo"):
                            raise ValueError(arg)
                        value = arg
                    elif name == "scale":
                        value = float(arg)
                    elif name == "qkv_heads":
                        value = int(arg)
                        if value < 1:
                            raise ValueError(arg)
                    else:
                        raise RetcError("%s: unknown op %r (transpose=P, reshape=S, gates=ORDER, scale=X, "
                                        "qkv_heads=H)" % (where, name))
                except ValueError:
                    raise RetcError("%s: %s needs %s, got %r" % (
                        where, name, {"transpose": "a permutation like 1,0", "reshape": "a shape like 512,64",
                                      "gates": "an order of i, f, g, o like ifgo", "scale": "a number",
                                      "qkv_heads": "a number of heads"}[name], arg))
                ops.append((name, value))
            rules.append(MapRule(where, words[0], words[1], ops))
    if not rules:
        raise RetcError("%s has no rules" % path)
    return rules


def _apply_map_ops(value, ops):
    import numpy

    for name, arg in ops:
        if name == "transpose":
            value = numpy.transpose(value, arg)
        elif name == "reshape":
            value = numpy.reshape(value, arg)
        elif name == "scale":
            value = value * arg
        elif name == "gates":
            blocks = numpy.split(value, 4, axis=-1)
            value = numpy.concatenate([blocks[arg.index(g)] for g in "gifo"], axis=-1)
        elif name == "qkv_heads":  # last axis (q|k|v, head, j) -> (head, q|k|v, j)
            shape = value.shape
            value = value.reshape(shape[:-1] + (3, arg, -1))
            value = numpy.moveaxis(value, -3, -2).reshape(shape)
    return numpy.ascontiguousarray(value)


def import_checkpoint(fmt, map_path, mapping, in_path, to, out_path):
    """Another tool's checkpoint as retc's: `fmt` "returnn-tf" (a TF checkpoint prefix, a
    hand-written RETURNN config's) or "torch-state-dict" (a .pt of a state dict, or of a
    dict with one under "model": i6_models, RETURNN's torch engine), renamed and laid out
    by the map at `map_path` (parse_checkpoint_map) into retc's params (`mapping`:
    (TF name, torch key, shape) each), written for the target `to` ("tf": a TF checkpoint
    prefix, "torch": a RETURNN torch .pt) at `out_path` (a scratch path; the caller renames
    it into place). Every retc param must be matched by exactly one rule, find its source
    and get its shape, else one line naming the first that does not. Returns (params,
    unmatched source names)."""
    import numpy

    rules = parse_checkpoint_map(map_path)
    if fmt == "returnn-tf":
        import tensorflow as tf

        if not os.path.exists(in_path + ".index"):
            raise FileNotFoundError("no TF checkpoint %s (no %s.index)" % (in_path, in_path))
        reader = tf.train.load_checkpoint(in_path)
        names = [k for k in reader.get_variable_to_shape_map() if not _is_tf_bookkeeping(k)]
        get = reader.get_tensor
    elif fmt == "torch-state-dict":
        import torch

        if not os.path.exists(in_path):
            raise FileNotFoundError("no torch checkpoint %s" % in_path)
        ckpt = torch.load(in_path, map_location="cpu", weights_only=False)
        state = ckpt["model"] if isinstance(ckpt, dict) and isinstance(ckpt.get("model"), dict) else ckpt
        if not isinstance(state, dict):
            raise CheckpointMismatch("%s holds no state dict (a %s)" % (in_path, type(state).__name__))
        names = list(state)
        get = lambda k: state[k].detach().cpu().numpy()  # noqa: E731
    else:
        raise ValueError("unknown checkpoint format %r" % (fmt,))
    known, used, values = set(names), set(), {}
    for tf_name, key, shape in mapping:
        hits = [(r, r.source_name(key)) for r in rules]
        hits = [(r, n) for r, n in hits if n is not None]
        if not hits:
            raise CheckpointMismatch("the map matches no rule to retc's param %s (shape %s)" % (key, list(shape)))
        if len(hits) > 1:
            raise CheckpointMismatch("retc's param %s is matched by two rules: %s and %s"
                                     % (key, hits[0][0].where, hits[1][0].where))
        rule, source = hits[0]
        if source not in known:
            raise CheckpointMismatch("retc's param %s: %s (%s) has no %s" % (key, in_path, rule.where, source))
        try:
            value = _apply_map_ops(get(source), rule.ops)
        except ValueError as exc:
            raise CheckpointMismatch("retc's param %s: %s's %s: %s (%s)" % (key, in_path, source, exc, rule.where))
        if list(value.shape) != list(shape):
            raise CheckpointMismatch("retc's param %s has the shape %s, but %s's %s gives %s (%s)"
                                     % (key, list(shape), in_path, source, list(value.shape), rule.where))
        used.add(source)
        values[(tf_name, key)] = value
    if to == "torch":
        import torch

        with _naming_full_disk(out_path):
            torch.save({"model": {k: torch.from_numpy(v) for (_, k), v in values.items()}, "epoch": 0, "step": 0,
                        "effective_learning_rate": None}, out_path)
    else:
        _save_tf_variables({n: v for (n, _), v in values.items()}, 0, out_path)
    return len(values), sorted(known - used)


def _save_tf_variables(values, step, out_path):
    """A TF checkpoint at the prefix `out_path` (.index, .data, .meta: RETURNN's TF
    engine loads one only with its .meta) of {variable name: value} and global_step."""
    import numpy
    import tensorflow as tf
    import returnn.tf.compat as tf_compat

    with tf.Graph().as_default(), _naming_full_disk(out_path):
        # The values are fed to the variables' initializers in one run, not put into the
        # graph as constants: the .meta file would hold them all (a published model's
        # 680 MB, written twice: 50 s instead of 5).
        values = dict(values, global_step=numpy.int64(step))
        variables = {n: tf_compat.v1.get_variable(n, shape=v.shape, dtype=tf.as_dtype(v.dtype),
                                                  initializer=tf_compat.v1.zeros_initializer())
                     for n, v in values.items()}
        saver = tf_compat.v1.train.Saver(var_list=list(variables.values()),
                                         write_version=tf_compat.v1.train.SaverDef.V2)
        with tf_compat.v1.Session(config=tf_session_config()) as session:
            session.run([v.initializer for v in variables.values()],
                        feed_dict={v.initializer.inputs[1]: values[n] for n, v in variables.items()})
            saver.save(session, out_path, write_meta_graph=True, write_state=False)


def convert_checkpoint(src, mapping, allow_extra, in_path, out_path):
    """Converts a checkpoint of one backend to the other. `mapping` lists
    (TF variable name, torch state_dict key, shape) for each param: retc's
    params have the same names (module paths) and the same layout on both
    targets, so each value is copied as it is (the torch target's LSTM reads
    TF's gate order; see README, "Checkpoints"). src "tf": `in_path` is a TF
    checkpoint (the prefix before .index), `out_path` a RETURNN torch
    checkpoint (.pt); src "torch": the other way round. `in_path` is checked
    as _check_checkpoint does (`allow_extra`). The caller gives an `out_path` in
    a directory of its own and renames the files into place (retc's ScratchDir):
    nothing is half-written. A full disk is named as such.
    Returns (params converted, epoch, step)."""
    import numpy
    import torch

    def check_shape(name, value, shape):
        if list(value.shape) != list(shape):
            raise ValueError("%s has the shape %s in %s, but the model's is %s"
                             % (name, list(value.shape), in_path, list(shape)))

    if src not in ("tf", "torch"):
        raise ValueError("unknown checkpoint backend %r" % (src,))
    _check_checkpoint(src, in_path, mapping, allow_extra)
    if src == "tf":
        import tensorflow as tf

        reader = tf.train.load_checkpoint(in_path)
        known = reader.get_variable_to_shape_map()
        state = {}
        for tf_name, key, shape in mapping:
            value = reader.get_tensor(tf_name)
            check_shape(tf_name, value, shape)
            state[key] = torch.from_numpy(numpy.ascontiguousarray(value))
        step = int(reader.get_tensor("global_step")) if "global_step" in known else 0
        epoch = _epoch_of(in_path)
        with _naming_full_disk(out_path):
            torch.save({"model": state, "epoch": epoch, "step": step, "effective_learning_rate": None},
                       out_path)
        return len(state), epoch, step
    ckpt = torch.load(in_path, map_location="cpu", weights_only=False)
    state = ckpt["model"] if isinstance(ckpt, dict) and "model" in ckpt else ckpt
    values = {}
    for tf_name, key, shape in mapping:  # all there: _check_checkpoint
        value = state[key].detach().cpu().numpy()
        check_shape(key, value, shape)
        values[tf_name] = value
    step = int(ckpt.get("step", 0)) if isinstance(ckpt, dict) else 0
    epoch = int(ckpt.get("epoch", 0)) if isinstance(ckpt, dict) else 0
    _save_tf_variables(values, step, out_path)
    return len(mapping), epoch, step


def _epoch_of(path):
    """The epoch in a checkpoint's name (network.005 -> 5), else 0."""
    base = os.path.basename(path)
    if base.endswith(".pt"):
        base = base[:-3]
    suffix = base.rsplit(".", 1)[-1] if "." in base else ""
    return int(suffix) if suffix.isdigit() else 0


def _size(n):
    """A byte count for people: 12 KiB, 3.4 MiB."""
    for unit in ("bytes", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return ("%d %s" if unit == "bytes" else "%.1f %s") % (n, unit)
        n /= 1024.0


class DiskFull(RetcError):
    """A write that failed because the disk is full."""


class _naming_full_disk:
    """Around a write of `path`: an error while the disk holding it is full (TF's
    saver says "enforce fail ... unexpected pos" or ResourceExhaustedError, torch
    "PytorchStreamWriter failed writing file" or "basic_ios::clear: iostream error")
    becomes DiskFull naming the file."""

    def __init__(self, path):
        self.path = path

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc is None or isinstance(exc, (KeyboardInterrupt, SystemExit)):
            return False
        import errno

        if isinstance(exc, OSError) and exc.errno not in (None, errno.ENOSPC):
            return False
        import shutil

        directory = os.path.dirname(os.path.abspath(self.path))
        while not os.path.isdir(directory):  # a scratch directory removed meanwhile
            directory = os.path.dirname(directory)
        try:
            free = shutil.disk_usage(directory).free
        except OSError:
            return False
        if free < 1 << 20:
            raise DiskFull("%s: cannot write '%s' (%s free)" % (
                os.strerror(errno.ENOSPC), _user_path(self.path), _size(free))) from exc
        return False


def _user_path(path):
    """The output that `path` becomes: a file in a scratch directory (".NAME.retc-tmp-PID",
    retc's ScratchDir) is renamed to the same name beside that directory."""
    import re

    scratch, name = os.path.split(path)
    if re.fullmatch(r"\..+\.retc-tmp-\d+", os.path.basename(scratch)):
        return os.path.join(os.path.dirname(scratch), name)
    return path


class CheckpointMismatch(RetcError):
    """A checkpoint that does not hold exactly the model's params."""


def _is_tf_bookkeeping(name):
    """A variable of a RETURNN TF checkpoint that is no param: the step counter, a random
    layer's generator state, an optimizer's slots and counters."""
    return (name in ("global_step", "learning_rate") or name.endswith("/random_generator/StateVar")
            or name.startswith("optimize/") or "_power" in name.rsplit("/", 1)[-1]
            or any(part in name.split("/")[-1:] for part in ("Adam", "Adam_1", "Momentum", "accumulator")))


def _check_checkpoint(backend, path, mapping, allow_extra=False):
    """Fails with one line unless the checkpoint `path` of `backend` holds every param of
    `mapping` ((TF variable name, torch key, shape) each) with its shape, and, unless
    `allow_extra`, no other (a checkpoint of a bigger model that contains this one would
    give other numbers without a word)."""
    if backend == "torch":
        import torch

        if not os.path.exists(path):
            raise FileNotFoundError("no torch checkpoint %s" % path)
        import zipfile

        try:
            # Memory-mapped where it can be (torch's zip format): the names and shapes
            # without reading the values, which RETURNN then reads (a published model's
            # checkpoint is 760 MB).
            ckpt = torch.load(path, map_location="cpu", weights_only=False, mmap=zipfile.is_zipfile(path))
        except Exception as exc:
            raise CheckpointMismatch("%s is damaged (truncated or overwritten?): %s"
                                     % (path, (str(exc).strip().splitlines() or [type(exc).__name__])[0]))
        state = ckpt["model"] if isinstance(ckpt, dict) and "model" in ckpt else ckpt
        shapes = {k: list(v.shape) for k, v in state.items()}
        names = [(key, shape) for _, key, shape in mapping]
        extra = sorted(set(shapes) - {key for key, _ in names})
    else:
        import tensorflow as tf

        if not os.path.exists(path + ".index"):
            raise FileNotFoundError("no TF checkpoint %s (no %s.index)" % (path, path))
        reader = tf.train.load_checkpoint(path)
        shapes = {k: list(v) for k, v in reader.get_variable_to_shape_map().items()}
        names = [(name, shape) for name, _, shape in mapping]
        for name, _ in names:  # the values too: a truncated .data file fails here, named
            if name in shapes:
                try:
                    reader.get_tensor(name)
                except Exception as exc:  # TF raises IndexError for a short file
                    raise CheckpointMismatch("%s is damaged (truncated or overwritten?): cannot read %s: %s"
                                             % (path, name, str(getattr(exc, "message", exc)).splitlines()[0]))
        extra = sorted(k for k in set(shapes) - {name for name, _ in names} if not _is_tf_bookkeeping(k))
    for name, shape in names:
        if name not in shapes:
            raise CheckpointMismatch("%s lacks the param %s (a checkpoint of another model?)" % (path, name))
        if shapes[name] != list(shape):
            raise CheckpointMismatch(
                "%s has %s with the shape %s, but the model's is %s (a checkpoint of another model?)"
                % (path, name, shapes[name], list(shape)))
    if extra and not allow_extra:
        raise CheckpointMismatch(
            "%s has %d param%s the model lacks (%s%s): a checkpoint of another model? "
            "--allow-extra-params uses it anyway" % (
                path, len(extra), "s" if len(extra) > 1 else "", ", ".join(extra[:3]),
                ", ..." if len(extra) > 3 else ""))


def _edit_distance(a, b):
    """Levenshtein distance of two label sequences."""
    prev = list(range(len(b) + 1))
    for i, x in enumerate(a, 1):
        cur = [i] + [0] * len(b)
        for j, y in enumerate(b, 1):
            cur[j] = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (x != y))
        prev = cur
    return prev[-1]


def _references(dataset_opts, key, epoch):
    """{seq_tag: [labels]} of the data `key` of a dataset."""
    from returnn.datasets import init_dataset

    dataset = init_dataset(dataset_opts)
    dataset.init_seq_order(epoch=epoch)
    refs = {}
    i = 0
    while dataset.is_less_than_num_seqs(i):
        dataset.load_seqs(i, i + 1)
        refs[dataset.get_tag(i)] = [int(v) for v in dataset.get_data(i, key)]
        i += 1
    return refs


def _search_tf(engine, config, dataset, output_path):
    """RETURNN's TF search (the search flag, the beams the network's choices keep), the
    hypotheses of the search output layer written as the torch target's _SearchWriter does."""
    from returnn.tf.engine import Runner

    layer = engine.network.get_layer(config.value("search_output_layer", "output"))
    out = layer.output.copy_as_batch_major()
    hyps = {}

    def callback(seq_tag, hyps_value, hyps_len, **_kwargs):
        for tag, value, n in zip(seq_tag, hyps_value, hyps_len):
            hyps[tag] = " ".join(str(int(v)) for v in value[:n])

    dataset.init_seq_order(epoch=engine.epoch)
    batches = dataset.generate_batches(
        recurrent_net=engine.network.recurrent, batch_size=config.int("batch_size", 1),
        max_seqs=config.int("max_seqs", -1), used_data_keys=engine.network.get_used_data_keys())
    runner = Runner(
        engine=engine, dataset=dataset, batches=batches, train=False, eval=False,
        extra_fetches={"seq_tag": engine.network.get_seq_tags(), "hyps_value": out.placeholder,
                       "hyps_len": out.get_sequence_lengths()},
        extra_fetches_callback=callback)
    start = time.perf_counter()
    runner.run(report_prefix=engine.get_epoch_str() + " search")
    engine.retc_decode_seconds = time.perf_counter() - start
    if not runner.finalized:
        raise RuntimeError("RETURNN's search did not finish")
    with open(output_path, "w") as f:
        f.write("{\n")
        for tag, hyp in hyps.items():
            f.write("%r: %r,\n" % (tag, hyp))
        f.write("}\n")


def _epoch_for_unnumbered_load():
    """RETURNN's TF engine takes the epoch of `load` from its name (network.005: 5) and
    fails with `AssertionError: task 'eval'` on one without (a converted checkpoint at
    any prefix): such a checkpoint counts as epoch 1 for eval, forward and search."""
    from returnn.engine.base import EngineBase

    get_epoch_model = EngineBase.get_epoch_model.__func__
    if getattr(get_epoch_model, "_retc", False):
        return

    def get_epoch_model_numbered(cls, config):
        epoch, filename = get_epoch_model(cls, config)
        if filename and not epoch and config.value("task", "train") != "train":
            epoch = 1
        return epoch, filename

    get_epoch_model_numbered._retc = True
    EngineBase.get_epoch_model = classmethod(get_epoch_model_numbered)


def _one_run_checkpoint_load():
    """RETURNN's TF CustomCheckpointLoader (taken where a checkpoint may lack variables:
    retc's configs of models with random layers set load_ignore_missing_vars) assigns
    each variable in a session run of its own, each a new executor: 50 ms a variable,
    19 s of swb-conformer-hybrid-2021's 393 before eval, forward or search. The same
    assignments (each variable's initializer, its value fed) in one run; a variable
    with a custom importer as before."""
    from returnn.tf.network import CustomCheckpointLoader

    if getattr(CustomCheckpointLoader.load_now, "_retc", False):
        return

    def load_now(self, session):
        ops, feed = [], {}
        for var, value in self.get_variable_value_map().items():
            op = var.initializer
            if value.value is None or op.type not in ("Assign", "AssignVariableOp") or op.inputs[1] in feed:
                value.assign_var(var=var, session=session)
                continue
            ops.append(op)
            feed[op.inputs[1]] = value.value
        if ops:
            session.run(ops, feed_dict=feed)

    load_now._retc = True
    CustomCheckpointLoader.load_now = load_now


def _initializing_only_what_load_lacks():
    """RETURNN's TF engine runs every variable's initializer before it restores `load`
    (eval, forward, search): the random initial values of all params, drawn only to be
    overwritten (7 of librispeech-att-2019's 16 s forward at its published size). Outside
    training, only the variables that the checkpoint in `load` lacks are initialized (the
    random layers' states: load_ignore_missing_vars), and those RETURNN initializes its
    own way (custom_post_init) as before."""
    from returnn.tf.network import TFNetwork, have_custom_post_init
    from returnn.util.basic import get_checkpoint_filepattern
    import tensorflow as tf

    initialize_params = TFNetwork.initialize_params
    if getattr(initialize_params, "_retc", False):
        return

    def initialize_unloaded_params(self, session):
        config = self.get_config()
        load = config.value("load", "") if config.value("task", "train") != "train" else ""
        if not load:
            return initialize_params(self, session)
        loaded = set(tf.train.load_checkpoint(get_checkpoint_filepattern(load)).get_variable_to_shape_map())
        var_list = [v for v in self.get_params_list() + self.get_auxiliary_params()
                    if v.op.name not in loaded or have_custom_post_init(v)]
        with tf.name_scope("var_initializer"):
            session.run(tf.compat.v1.variables_initializer(var_list=var_list))
        for var in var_list:
            custom_post_init = getattr(var, "custom_post_init", None)
            if custom_post_init:
                custom_post_init(session=session)

    initialize_unloaded_params._retc = True
    TFNetwork.initialize_params = initialize_unloaded_params


def _initial_checkpoint_as_epoch_one():
    """RETURNN's torch engine takes the epoch of `load` from the checkpoint's own "epoch"
    when its name has none; 0 there (an initial model: retc's convert-checkpoint --from,
    RETURNN's initialize_model) leaves the dataset without an epoch, and eval, forward and
    search fail in its iterator: such a checkpoint counts as epoch 1, as an unnumbered TF
    checkpoint does (_epoch_for_unnumbered_load)."""
    from returnn.torch.engine import Engine

    set_epoch = Engine.set_epoch
    if getattr(set_epoch, "_retc", False):
        return

    def set_epoch_not_zero(self, epoch):
        set_epoch(self, epoch or 1)

    set_epoch_not_zero._retc = True
    Engine.set_epoch = set_epoch_not_zero


class NonFiniteLoss(RetcError):
    """A loss that is NaN or inf."""


class _LastBatch:
    """The sequence tags and input arrays (batch-major) of the batch the engine ran last
    (hooks of _remember_batches): named when a loss turns out NaN or inf. Kept as they are;
    looked into only then (_batch_note), nothing per step."""

    tags = None
    arrays = ()


def _remember_batch(tags, arrays):
    _LastBatch.tags, _LastBatch.arrays = tags, arrays


def _remember_batches(backend):
    """Hooks where each engine turns a batch into its step's input (TF's feed dict, torch's
    extern data), so that a NaN or inf loss can name its batch's sequences (_LastBatch)."""
    _LastBatch.tags, _LastBatch.arrays = None, ()
    if backend == "torch":
        import returnn.torch.data.extern_data as module

        func = module.raw_dict_to_extern_data
        if getattr(func, "_retc_batches", False):
            return

        def raw_dict_to_extern_data(extern_data_raw, **kwargs):
            tags = extern_data_raw.get("seq_tag")
            if tags is not None:
                _remember_batch(tags, [v for k, v in extern_data_raw.items() if k != "seq_tag"])
            return func(extern_data_raw, **kwargs)

        raw_dict_to_extern_data._retc_batches = True
        module.raw_dict_to_extern_data = raw_dict_to_extern_data
        return
    from returnn.tf.data_pipeline import FeedDictDataProvider

    get_feed_dict = FeedDictDataProvider.get_feed_dict
    if getattr(get_feed_dict, "_retc_batches", False):
        return

    def remembering(self, single_threaded=False):
        feed, meta = get_feed_dict(self, single_threaded=single_threaded)
        if meta and meta.get("seq_tag") is not None:
            _remember_batch(meta["seq_tag"], list(feed.values()))
        return feed, meta

    remembering._retc_batches = True
    FeedDictDataProvider.get_feed_dict = remembering


def _batch_note():
    """Which sequences of the last batch hold NaN or inf in their input, else the batch's."""
    import numpy

    def listed(tags):
        return ", ".join(tags[:5]) + (" and %d more" % (len(tags) - 5) if len(tags) > 5 else "")

    tags = [t.decode() if isinstance(t, bytes) else str(t) for t in (_LastBatch.tags if _LastBatch.tags is not None else [])]
    arrays = []
    for a in _LastBatch.arrays:
        a = a.cpu().numpy() if hasattr(a, "cpu") else a  # torch's batch, TF's feed values
        if isinstance(a, numpy.ndarray) and a.dtype.kind == "f" and a.ndim >= 1 and a.shape[0] == len(tags):
            arrays.append(a)
    bad = [tag for i, tag in enumerate(tags) if any(not numpy.isfinite(a[i]).all() for a in arrays)]
    if bad:
        return "NaN or inf in the input of %s" % listed(bad)
    if tags:
        return ("in the batch of %s (no NaN or inf in their input: a diverged model or a broken "
                "checkpoint?)" % listed(_LastBatch.tags))
    return "NaN or inf in the data, or a diverged model or a broken checkpoint"


class _naming_nonfinite:
    """RETURNN's own stop at a NaN or inf loss (both trainings, TF's eval: "Inf/nan score
    in step N.") as a NonFiniteLoss that names the step and the batch's sequences."""

    def __enter__(self):
        return self

    def __exit__(self, typ, exc, tb):
        import re

        if exc is None:
            return False
        for e in _exception_chain(exc):
            # (RETURNN's torch engine appends lines: the step's data, the module stack.)
            m = re.match(r"Inf/nan score in step (\d+)\.(\n|$)", str(e))
            if m:
                raise NonFiniteLoss("the loss is NaN or inf in step %s: %s (--allow-nonfinite goes on)"
                                    % (m.group(1), _batch_note())) from exc
        return False


class _feeding_output_lengths:
    """RETURNN's TF forward feeds the data keys that layers read (the network's used
    keys) and fetches the output's lengths: an output whose time axis is a dim of
    another key (a frame-wise model cut to its alignment's length, e.g.
    swb-conformer-hybrid-2021 at the length of "classes") needs that key fed, though
    no layer of the forward path reads it. While the forward task runs, an output
    layer's dynamic axis that no used key has adds the keys that have it."""

    def __enter__(self):
        from returnn.tf.network import TFNetwork

        self._original = original = TFNetwork.get_used_data_keys

        def get_used_data_keys(net, exclude_extra_added=True):
            keys = set(original(net, exclude_extra_added=exclude_extra_added))
            if net.parent_net is not None:
                return keys
            data = net.extern_data.data
            for layer in net.get_output_layers():
                for tag in layer.output.dim_tags:
                    if not tag.is_dynamic() or tag.is_batch_dim():
                        continue
                    if any(tag in data[key].dim_tags for key in keys if key in data):
                        continue  # fed already (12ax's labels share the features' time)
                    keys.update(key for key in data if tag in data[key].dim_tags)
            return keys

        TFNetwork.get_used_data_keys = get_used_data_keys
        return self

    def __exit__(self, *_exc):
        from returnn.tf.network import TFNetwork

        TFNetwork.get_used_data_keys = self._original
        return False


def _stop_on_nonfinite_eval():
    """RETURNN's torch eval sums a NaN or inf loss into the scores without a word (its
    TF eval and both trainings stop): stop at the step, naming the loss."""
    import math

    import returnn.torch.engine as torch_engine

    report = getattr(torch_engine._print_process, "_retc_nonfinite", torch_engine._print_process)

    def print_process(report_prefix, *, step, eval_info=None, **kwargs):
        for name, value in (eval_info or {}).items():
            if not math.isfinite(value):
                raise NonFiniteLoss("%s is %s in step %d of %s: %s (--allow-nonfinite goes on)"
                                    % (name, value, step, report_prefix.strip(), _batch_note()))
        return report(report_prefix, step=step, eval_info=eval_info, **kwargs)

    print_process._retc_nonfinite = report
    torch_engine._print_process = print_process


def _preload(config_path, backend, mapping, module, path):
    """--preload MODULE=PATH: checks that PATH holds exactly the params of `mapping`
    under the module (named without its prefix), then has RETURNN load them from
    it after the checkpoint (its preload_from_files, for recognition) by adding
    that to the config."""
    tf_prefix, torch_prefix = module.replace(".", "/") + "/", module + "."
    sub = [(name[len(tf_prefix):], key[len(torch_prefix):], shape)
           for name, key, shape in mapping if key.startswith(torch_prefix)]
    _check_checkpoint(backend, path, sub)
    prefix = tf_prefix if backend == "tf" else torch_prefix
    with open(config_path, "a") as f:
        f.write("\npreload_from_files = %r\n" % {"retc_preload": {"filename": path, "prefix": prefix}})


def run_task(config_path, task, mapping, allow_extra, output_path, preload_module="", preload_path=""):
    """RETURNN's eval, forward or search `task` (the torch config's is "forward" for search) on the checkpoint in
    `load`, checked first against the model's params (`mapping`, as for
    convert_checkpoint). Forward writes the config's HDF file; search writes the
    hypotheses to `output_path` (the config's file on torch) in RETURNN's "py" search
    output format. Returns (epoch, [(key, value)]): eval: RETURNN's scores as training
    records them; forward: none; search: "seqs", "label_errors", "ref_labels" and
    "seq_errors" against the dataset's "classes"."""
    import returnn.__main__ as rnn

    import contextlib
    import tempfile

    probe = _prepare(config_path)
    backend = "torch" if probe.value("backend", "") == "torch" else "tf"
    _check_checkpoint(backend, probe.value("load", ""), mapping, allow_extra)
    if preload_module:
        _preload(config_path, backend, mapping, preload_module, preload_path)
    if backend == "tf":
        _epoch_for_unnumbered_load()
        _one_run_checkpoint_load()
        _initializing_only_what_load_lacks()
    else:
        _initial_checkpoint_as_epoch_one()
    if output_path:
        # RETURNN's HDF writer writes a temporary file first (tempfile): in the caller's
        # directory for the output, which it removes on every path.
        tempfile.tempdir = os.path.dirname(output_path)
    try:
        rnn.init(config_filename=config_path, extra_greeting="retc %s, in process." % task)
        config, engine = rnn.config, rnn.engine
        if task == "eval":
            if backend == "torch":
                # RETURNN's torch engine sets up eval with training (init_train_from_config),
                # which would make an optimizer (torch's imports torch._dynamo then: 1.4 s) and
                # load its state from beside `model`: eval steps none.
                engine._load_optimizer = lambda **_kwargs: None
                from returnn.torch.updater import Updater

                create_optimizer = Updater.create_optimizer
                Updater.create_optimizer = lambda self: None
                try:
                    engine.init_train_from_config(config, rnn.train_data, rnn.dev_data, rnn.eval_data)
                finally:
                    Updater.create_optimizer = create_optimizer
            else:
                engine.init_train_from_config(config, rnn.train_data, rnn.dev_data, rnn.eval_data)
            engine.learning_rate_control.filename = None  # the scores stay in memory
            if backend == "torch":
                if config.bool("stop_on_nonfinite_train_score", True):  # RETURNN's option (--allow-nonfinite)
                    _stop_on_nonfinite_eval()
                engine.eval_model()
            else:
                with _naming_nonfinite():
                    engine.eval_model(lr_control_update_scores=True)
            last, scores = _scores(engine.learning_rate_control)
        elif task == "forward":
            # (TF's network only: on torch the patch would import TensorFlow, seconds for nothing.)
            feeding = _feeding_output_lengths() if backend == "tf" else contextlib.nullcontext()
            with _naming_full_disk(output_path), feeding:
                rnn.execute_main_task()
            last, scores = engine.epoch, []
        elif task == "search":
            from returnn.datasets import init_dataset

            data_opts = config.typed_value("search_data" if backend == "tf" else "forward_data")
            if backend == "torch":
                forward = engine.forward_with_callback

                def timed_forward(*args, **kwargs):  # the decoding alone, not the model's set-up
                    start = time.perf_counter()
                    try:
                        return forward(*args, **kwargs)
                    finally:
                        engine.retc_decode_seconds = time.perf_counter() - start

                engine.forward_with_callback = timed_forward
                rnn.execute_main_task()  # the forward task with the search writer
            else:
                # The dataset first, as RETURNN's own tasks do: a DummyGenericDataset
                # made from extern_data after the network resets the dims' lengths.
                dataset = init_dataset(data_opts)
                engine.use_search_flag = True
                engine.use_eval_flag = False
                engine.init_network_from_config(config)
                _search_tf(engine, config, dataset, output_path)
            last = engine.epoch
            with open(output_path) as f:
                hyps = eval(f.read())
            refs = _references(data_opts, "classes", last or 1)
            edits = ref_labels = seq_errors = 0
            for tag, hyp in hyps.items():
                ref = refs[tag]
                labels = [int(v) for v in hyp.split()]
                edits += _edit_distance(labels, ref)
                ref_labels += len(ref)
                seq_errors += labels != ref
            scores = [("seqs", float(len(hyps))), ("label_errors", float(edits)),
                      ("ref_labels", float(ref_labels)), ("seq_errors", float(seq_errors)),
                      ("decode_seconds", float(getattr(engine, "retc_decode_seconds", 0.0)))]
        else:
            raise ValueError("run_task: task %r" % task)
        rnn.finalize()
        return int(last or 0), scores
    finally:
        _flush()


if __name__ == "__main__":  # a torchrun worker (train_distributed)
    _torchrun_worker(sys.argv[1], float(sys.argv[2]))
