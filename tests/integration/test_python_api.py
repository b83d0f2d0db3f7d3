"""The Python entry point (tools/python/retc), as installed: `cmake --install`
into a prefix, the package imported from there by the venv's Python, and the
`retc` binary found next to it (no $RETC). Lists the bundled models and their
options; compiles 12ax and conformer-ctc with options for both targets (the
text equals `retc compile`'s bytes); writes the structured form (i6_core's
ReturnnConfig layout: prolog, sorted plain values, epilog) and trains it one
epoch with `python -m returnn`; errors raise RetcError with the command's line.
"""
# ctest-group: 4  (cases per process: tests/integration/cases.py)

import importlib
import os
import subprocess
import sys
import tempfile

PREFIX = tempfile.mkdtemp(prefix="retc-py-prefix-")
_retc = None


def retc_module():
    """The package from a fresh install prefix (once per process)."""
    global _retc
    if _retc is None:
        subprocess.run(["cmake", "--install", os.environ["RETC_BUILD_DIR"], "--prefix", PREFIX],
                       check=True, stdout=subprocess.DEVNULL)
        site = os.path.join(PREFIX, "lib", "python%d.%d" % sys.version_info[:2], "site-packages")
        sys.path.insert(0, site)
        os.environ.pop("RETC", None)  # the package finds PREFIX/bin/retc itself
        _retc = importlib.import_module("retc")
        assert _retc.__file__.startswith(site), _retc.__file__
        assert _retc.Retc().binary == os.path.join(PREFIX, "bin", "retc"), _retc.Retc().binary
    return _retc


def test_models():
    retc = retc_module()
    models = {m.name: m for m in retc.models()}
    for name in ("12ax", "conformer-ctc", "swb-conformer-hybrid-2021", "librispeech-att-2019"):
        assert name in models, sorted(models)
    opts = {o.name: o for o in models["conformer-ctc"].options}
    blocks = opts["blocks"]
    assert (blocks.type, blocks.default, blocks.min, blocks.max) == ("int", 2, 1, None), blocks
    assert (opts["dropout"].type, opts["dropout"].default, opts["dropout"].max) == ("float", 0.1, 1.0)
    assert opts["learning_rate"].default == 0.001 and opts["epochs"].default == 10
    for m in models.values():
        assert {"learning_rate", "epochs"} <= {o.name for o in m.options}, m.name
    print("%d models; conformer-ctc has %d options: %s" % (len(models), len(opts), ", ".join(opts)))


CASES = [("12ax", "tf", {"hidden": 16, "train_seqs": 100}),
         ("12ax", "torch", {"hidden": 16, "train_seqs": 100}),
         ("conformer-ctc", "tf", {"blocks": 1, "model_dim": 32, "train_seqs": 100}),
         ("conformer-ctc", "torch", {"blocks": 1, "model_dim": 32, "train_seqs": 100})]


def test_compile_equals_cli():
    retc = retc_module()
    binary = retc.Retc().binary
    with tempfile.TemporaryDirectory() as tmp:
        for model, backend, options in CASES:
            text = retc.compile(model, backend=backend, options=options, epochs=1)
            out = os.path.join(tmp, "cli.config")
            sets = sum((["--set", "%s=%s" % kv] for kv in options.items()), [])
            subprocess.run([binary, "compile", model, "--backend", backend, "--epochs", "1", "-o", out]
                           + sets, check=True)
            with open(out, encoding="utf-8") as f:
                assert text == f.read(), (model, backend)
            header = text.split("\n")[3]
            assert header.startswith("# options: "), text[:300]
            assert all(("%s=%s" % kv) in header.split() for kv in options.items()), header
            parts = retc.compile_parts(model, backend=backend, options=options, epochs=1)
            assert parts.text == text
            assert parts.config["num_epochs"] == 1 and "batch_size" in parts.config, parts.config
            assert "network" not in parts.config and "extern_data" not in parts.config
            assert "extern_data = " in parts.python_epilog, parts.python_epilog[:200]
            assert ("def get_model" in parts.python_epilog) == (backend == "torch")
        # The production options as keyword arguments: the same bytes as the CLI's flags.
        production = dict(device="cpu", amp="bfloat16", keep_last=2, keep_best=1, keep_epochs=[5, 10],
                          workers=2, distributed=True, reduce="param", param_sync_step=10, log_verbosity=4)
        text = retc.compile("conformer-ctc", backend="torch", **production)
        out = os.path.join(tmp, "cli.config")
        subprocess.run([binary, "compile", "conformer-ctc", "--backend", "torch", "--device", "cpu", "--amp",
                        "bfloat16", "--keep-last", "2", "--keep-best", "1", "--keep-epochs", "5,10", "--workers",
                        "2", "--distributed", "--reduce", "param", "--param-sync-step", "10", "--log-verbosity", "4",
                        "-o", out],
                       check=True)
        with open(out, encoding="utf-8") as f:
            assert text == f.read()
        parts = retc.compile_parts("conformer-ctc", backend="torch", **production)
        assert parts.config["torch_amp"] == {"dtype": "bfloat16", "grad_scaler": None}, parts.config
        assert parts.config["cleanup_old_models"] == {"keep_last_n": 2, "keep_best_n": 1, "keep": [5, 10]}
        assert parts.config["torch_dataloader_opts"] == {"num_workers": 2}
        assert parts.config["log_verbosity"] == 4 and parts.config["device"] == "cpu"
        assert parts.config["apply_cleanup_old_models_to_optim_states"] is True
        assert parts.config["torch_distributed"] == {"backend": "gloo", "reduce_type": "param",
                                                     "param_sync_step": 10}, parts.config
        try:
            retc.compile("conformer-ctc", amp="bfloat16")
            raise AssertionError("--amp on tf compiled")
        except retc.RetcError as e:
            assert "the tf target has no torch_amp" in str(e), str(e)
    print("%d configs: the package's text == `retc compile`'s bytes; the production options as "
          "keyword arguments" % (len(CASES) + 1))


def test_parts_train():
    """Each structured form, written as ReturnnConfig writes it, trains one
    epoch with `python -m returnn` (a checkpoint for epoch 1)."""
    retc = retc_module()
    for model, backend, options in CASES[1:3]:
        with tempfile.TemporaryDirectory() as tmp:
            parts = retc.compile_parts(model, backend=backend, options=options, epochs=1,
                                       model_dir=os.path.join(tmp, "model"))
            config = os.path.join(tmp, "returnn.config")
            parts.write(config)
            with open(config, encoding="utf-8") as f:
                written = f.read()
            assert written.startswith("#!rnn.py\n") and "locals().update(**config)" in written
            r = subprocess.run([sys.executable, "-m", "returnn", config], cwd=tmp,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True)
            assert r.returncode == 0, r.stdout[-3000:]
            ckpt = os.path.join(tmp, "model", "network.001" + (".pt" if backend == "torch" else ".index"))
            assert os.path.exists(ckpt), (os.listdir(os.path.join(tmp, "model")), r.stdout[-2000:])
            print("%s (%s, %s): %d plain values, %d lines of code; python -m returnn trained epoch 1"
                  % (model, backend, options, len(parts.config), parts.python_epilog.count("\n")))


def test_errors():
    """A bad option is a RetcError (exit 2) with the CLI's line; a model error
    names the model file's line, as the CLI does."""
    retc = retc_module()
    try:
        retc.compile("conformer-ctc", options={"blocks": "x"})
        raise AssertionError("no error for blocks=x")
    except retc.RetcError as e:
        assert e.exit_code == 2, e.exit_code
        assert str(e).startswith("retc: error: model 'conformer-ctc': --set blocks=x: blocks is an integer"), e
    bad = retc.Retc(os.environ["RETC_TEST_MODELS"])
    name = "bad-dims"
    assert name in {m.name for m in bad.models()}
    cli = subprocess.run([bad.binary, "compile", name, "-o", os.path.join(PREFIX, "x.config")],
                         stderr=subprocess.PIPE, universal_newlines=True)
    try:
        bad.compile(name)
        raise AssertionError("no error for " + name)
    except retc.RetcError as e:
        assert e.exit_code == 1 and str(e) == cli.stderr.splitlines()[0], (str(e), cli.stderr)
        assert ".cc:" in str(e).split(": error: ")[0], str(e)
        print("errors: %s" % e)


if __name__ == "__main__":
    globals()["test_" + sys.argv[1]]()
