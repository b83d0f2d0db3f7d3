"""Reads values back from RETURNN's PyTorch engine for the integration tests.

A retc torch config is loaded as RETURNN's torch engine loads it: the model
from the config's get_model, wrapped as a torch module, steps through the
config's train_step and RETURNN's own torch Updater (so the optimizer, its
param groups and retc's param hooks act as they do in training).
"""

import os
import subprocess
import sys
import tempfile

import numpy

sys.path.insert(0, os.path.join(os.environ["RETC_SOURCE_DIR"], "runtime"))
from retc_runtime import _random_values  # noqa: E402  (the batch `retc check` uses)

import torch  # noqa: E402

from returnn.log import log  # noqa: E402
from returnn.config import Config, set_global_config  # noqa: E402
from returnn.util.basic import BehaviorVersion  # noqa: E402
import returnn.frontend as rf  # noqa: E402
from returnn.tensor import TensorDict  # noqa: E402
from returnn.torch.data import extern_data as extern_data_util  # noqa: E402
from returnn.torch.frontend.bridge import rf_module_to_pt_module  # noqa: E402
from returnn.torch.updater import Updater  # noqa: E402

log.initialize(verbosity=[0])

TMP = tempfile.mkdtemp(prefix="retc-torch-probe-")


def compile_model(model, binary=None, extra=()):
    """`retc compile MODEL --backend torch`; returns the config path."""
    binary = binary or os.environ["RETC_TEST_MODELS"]
    path = os.path.join(TMP, model + ".torch.config")
    subprocess.run([binary, "compile", model, "--backend", "torch", "-o", path,
                    "--model-dir", os.path.join(TMP, model), *extra], check=True)
    return path


class TorchNet:
    """A model of a torch config, with RETURNN's updater."""

    def __init__(self, config_path, learning_rate=None, with_updater=True):
        self.config = Config()
        self.config.load_file(config_path)
        if learning_rate is not None:
            self.config.set("learning_rate", learning_rate)
        set_global_config(self.config)
        BehaviorVersion.set(self.config.int("behavior_version", 0) or None)
        rf.select_backend_torch()
        rf.set_random_seed(self.config.int("random_seed", 42))
        self.model = self.config.typed_value("get_model")(epoch=1, step=0)
        self.pt_model = rf_module_to_pt_module(self.model)
        self.global_step = 0
        if not with_updater:
            return
        self.updater = Updater(config=self.config, network=self.pt_model, device="cpu",
                               initial_learning_rate=self.config.float("learning_rate", 1.0))
        self.updater.create_optimizer()
        self.updater.set_learning_rate(self.config.float("learning_rate", 1.0))

    def batch(self, seed=1, batch=3, max_time=7):
        """Random extern data, as `retc check` makes it (by default of its size: 3
        sequences, the longest of 7 frames)."""
        template = TensorDict()
        template.update(self.config.typed_value("extern_data"), auto_convert=True)
        keys = sorted(template.data, key=lambda k: (k != "data", k))
        datas = [(k, template.data[k]) for k in keys]
        values, sizes = _random_values(datas, numpy.random.RandomState(seed), batch, max_time)
        raw = {key: torch.tensor(value) for key, value in values.items()}
        for key, data in datas:
            for tag in data.dims:
                if tag in sizes:
                    raw[key + ":seq_len"] = torch.tensor(sizes[tag])
        return raw, template

    def run(self, raw, train=True):
        """train_step on one batch; returns the run context (its losses)."""
        raw_, template = raw
        extern_data = extern_data_util.raw_dict_to_extern_data(
            raw_, extern_data_template=template, device="cpu", with_eval_targets=True)
        rf.init_train_step_run_ctx(train_flag=train, step=self.global_step, epoch=1)
        self.config.typed_value("train_step")(model=self.model, extern_data=extern_data)
        return rf.get_run_ctx()

    def step(self, raw):
        """One training step as RETURNN's engine does it: loss, backward, update."""
        self.updater.set_current_train_step(global_train_step=self.global_step, epoch=1)
        self.updater.zero_grad()
        ctx = self.run(raw)
        ctx.total_loss().raw_tensor.backward()
        self.updater.step()
        self.global_step += 1
        return ctx

    def params(self):
        """{state_dict key: value}."""
        return {k: v.detach().numpy().copy() for k, v in self.pt_model.state_dict().items()}
