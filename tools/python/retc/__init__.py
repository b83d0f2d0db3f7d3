"""retc from Python: list models and their options, compile a model to a
RETURNN config, as text or in the structured form of i6_core's ReturnnConfig.

    import retc

    for m in retc.models():
        print(m.name, [o.name for o in m.options])
    text = retc.compile("conformer-ctc", backend="torch", options={"blocks": 6})
    parts = retc.compile_parts("conformer-ctc", options={"blocks": 6})
    parts.config          # the plain values: a dict a pipeline can hash
    parts.python_prolog   # the header comments and imports
    parts.python_epilog   # the code: dims, extern_data, the network, get_model, ...
    parts.returnn_config()  # i6_core.returnn.config.ReturnnConfig, where i6_core is installed

A thin layer over the command line of a retc binary: the bundled `retc`, or a
user's own model binary (retc_add_model), the same way: `Retc("path/to/my_model")`.
Errors raise RetcError with the line the command printed (a model error names
the user's file:line).
"""

import ast
import json
import os
import pprint
import shutil
import subprocess
import tempfile

__all__ = ["Retc", "RetcError", "Model", "Option", "ConfigParts", "models", "compile",
           "compile_parts"]


class RetcError(Exception):
    """A retc command failed. str(e) is its one-line message; `exit_code` is 1
    (an error) or 2 (a usage error: a wrong option name, type or range)."""

    def __init__(self, message, exit_code, stderr=""):
        super().__init__(message)
        self.message = message
        self.exit_code = exit_code
        self.stderr = stderr


class Option:
    """A model option: name, type ("bool", "int", "float", "string", "enum"),
    default, help, and min/max (ints, floats) or choices (enums)."""

    def __init__(self, d):
        self.name = d["name"]
        self.type = d["type"]
        self.default = d["default"]
        self.help = d["help"]
        self.describe = d["describe"]
        self.min = d.get("min")
        self.max = d.get("max")
        self.choices = d.get("choices")

    def __repr__(self):
        return "Option(%s=%r: %s)" % (self.name, self.default, self.describe)


class Model:
    """A model a binary knows: its name, description and options."""

    def __init__(self, d):
        self.name = d["name"]
        self.description = d["description"]
        self.options = [Option(o) for o in d["options"]]

    def __repr__(self):
        return "Model(%r, %d options)" % (self.name, len(self.options))


def _format_value(value):
    """A Python value as --set takes it."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _default_binary():
    """$RETC, else the `retc` installed with this package (PREFIX/bin/retc for
    PREFIX/lib/pythonX.Y/site-packages/retc), else `retc` on PATH."""
    if os.environ.get("RETC"):
        return os.environ["RETC"]
    here = os.path.dirname(os.path.abspath(__file__))
    installed = os.path.normpath(os.path.join(here, "..", "..", "..", "..", "bin", "retc"))
    if os.access(installed, os.X_OK):
        return installed
    found = shutil.which("retc")
    if found:
        return found
    raise RetcError("no retc binary: set RETC, pass Retc(binary), or put retc on PATH", 1)


class ConfigParts:
    """A compiled config in the form of i6_core's ReturnnConfig: `config`, the
    plain values (literals: datasets, batching, optimizer, schedule, paths);
    `python_prolog`, the header comments and the imports; `python_epilog`, the
    rest, in the config's order (dims, extern_data, the network or get_model
    and train_step, datasets that refer to extern_data, private state such as
    `_param_options`). RETURNN reads the same values either way: the plain
    values are literals that refer to nothing, so their place does not matter.
    `text` is the config as `retc compile` writes it."""

    def __init__(self, text):
        self.text = text
        self.config = {}
        prolog, epilog = [], []
        lines = text.splitlines(keepends=True)
        tree = ast.parse(text)
        # The header: the comment lines before the first statement (not `#!rnn.py`).
        first = tree.body[0].lineno if tree.body else len(lines) + 1
        prolog.append("".join(line for line in lines[:first - 1]
                              if line.startswith("#") and not line.startswith("#!")))
        prev_end = first - 1
        for stmt in tree.body:
            segment = "".join(lines[prev_end:stmt.end_lineno])
            prev_end = stmt.end_lineno
            if isinstance(stmt, (ast.Import, ast.ImportFrom)):
                prolog.append(segment)
                continue
            # (Private names, `_param_options = {}`, are the code's own state.)
            if (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1
                    and isinstance(stmt.targets[0], ast.Name)
                    and not stmt.targets[0].id.startswith("_")):
                try:
                    value = ast.literal_eval(stmt.value)
                except ValueError:
                    pass
                else:
                    if pprint.isreadable(value):
                        self.config[stmt.targets[0].id] = value
                        continue
            epilog.append(segment)
        self.python_prolog = "".join(prolog).strip("\n") + "\n"
        self.python_epilog = "".join(epilog).strip("\n") + "\n"

    def returnn_config(self):
        """An i6_core.returnn.config.ReturnnConfig of these parts (needs i6_core and
        Sisyphus on the path)."""
        from i6_core.returnn.config import ReturnnConfig

        return ReturnnConfig(dict(self.config), python_prolog=self.python_prolog,
                             python_epilog=self.python_epilog)

    def serialize(self):
        """The config file ReturnnConfig.serialize writes of these parts, without
        i6_core: `#!rnn.py`, the prolog, the values (sorted, pprint), the epilog."""
        pp = pprint.PrettyPrinter(indent=2, width=150)
        values = "\n".join("%s = %s" % (k, pp.pformat(v)) for k, v in sorted(self.config.items()))
        return "#!rnn.py\n\n%s\n%s\nconfig = {}\n\nlocals().update(**config)\n\n%s" % (
            self.python_prolog, values, self.python_epilog)

    def write(self, path):
        """Writes serialize() to `path` (under a temporary name, then renamed)."""
        tmp = "%s.tmp-%d" % (path, os.getpid())
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(self.serialize())
        os.replace(tmp, path)


class Retc:
    """A retc binary: the bundled `retc` (default) or a user's model binary."""

    def __init__(self, binary=None):
        self.binary = binary or _default_binary()

    def _run(self, args):
        r = subprocess.run([self.binary] + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           universal_newlines=True)
        if r.returncode != 0:
            lines = [line for line in r.stderr.splitlines() if line.strip()]
            raise RetcError(lines[0] if lines else "%s exited with %d" % (self.binary, r.returncode),
                            r.returncode, r.stderr)
        return r.stdout

    def models(self):
        """Every model the binary knows, with its options."""
        return [Model(d) for d in json.loads(self._run(["list", "--json"]))]

    def model(self, name):
        """The model `name`; RetcError if the binary does not know it."""
        for m in self.models():
            if m.name == name:
                return m
        raise RetcError("unknown model '%s'; known models: %s"
                        % (name, ", ".join(m.name for m in self.models())), 1)

    def compile(self, model, backend="tf", task="train", options=None, epochs=None, seed=None,
                model_dir=None, device=None, beam=None, amp=None, keep_last=None, keep_best=None,
                keep_epochs=None, workers=None, distributed=False, reduce=None, param_sync_step=None,
                dataset_distribution=None, log_verbosity=None):
        """The config text `retc compile` writes, byte for byte. `options`: a dict
        of the model's options (as --set NAME=VALUE). The rest are compile's flags
        (`retc compile --help`): device ("auto", "cpu", "gpu"), and the production
        options: amp ("bfloat16", "float16"), keep_last, keep_best, keep_epochs (a
        list of epochs), workers, log_verbosity; for several processes (torch_distributed,
        distributed=True): reduce ("grad", "param"), param_sync_step, dataset_distribution
        ("shard", "random_seed_offset")."""
        args = ["compile", model, "--backend", backend, "--task", task]
        for name, value in (options or {}).items():
            args += ["--set", "%s=%s" % (name, _format_value(value))]
        if distributed:
            args.append("--distributed")
        if keep_epochs is not None:
            keep_epochs = ",".join(str(int(e)) for e in keep_epochs)
        for flag, value in (("--epochs", epochs), ("--seed", seed), ("--model-dir", model_dir),
                            ("--device", device), ("--beam", beam), ("--amp", amp),
                            ("--keep-last", keep_last), ("--keep-best", keep_best),
                            ("--keep-epochs", keep_epochs), ("--workers", workers),
                            ("--reduce", reduce), ("--param-sync-step", param_sync_step),
                            ("--dataset-distribution", dataset_distribution),
                            ("--log-verbosity", log_verbosity)):
            if value is not None:
                args += [flag, str(value)]
        with tempfile.TemporaryDirectory(prefix="retc-py-") as tmp:
            out = os.path.join(tmp, "returnn.config")
            self._run(args + ["-o", out])
            with open(out, encoding="utf-8") as f:
                return f.read()

    def compile_parts(self, model, **kwargs):
        """compile() in the structured form (ConfigParts)."""
        return ConfigParts(self.compile(model, **kwargs))


def models():
    """Retc().models(): the bundled models."""
    return Retc().models()


def compile(model, **kwargs):  # noqa: A001 (the verb users expect)
    """Retc().compile(model, ...)."""
    return Retc().compile(model, **kwargs)


def compile_parts(model, **kwargs):
    """Retc().compile_parts(model, ...)."""
    return Retc().compile_parts(model, **kwargs)
