"""Run under torchrun by torch_nproc.sh: one rank of RETURNN's torch training
on a retc config (as `retc train --nproc` runs it), for one epoch into a model
dir of its own; then each rank writes its params to OUT/rank<R>.pt, so that
the test can compare the ranks' params.

Usage: torchrun --standalone --nproc_per_node=N torch_ddp_probe.py CONFIG OUT
"""

import os
import sys

import torch

import returnn.__main__ as rnn


def main(config, out):
    rnn.init(config_filename=config, config_updates={
        "num_epochs": 1, "model": os.path.join(out, "model", "network"),
        "log": os.path.join(out, "returnn.%s.log" % os.environ["RANK"])})
    rnn.execute_main_task()
    state = {k: v.detach().cpu() for k, v in rnn.engine._pt_model.state_dict().items()}
    torch.save(state, os.path.join(out, "rank%s.pt" % os.environ["RANK"]))
    print("rank %s: %d params after %d steps" % (os.environ["RANK"], len(state), rnn.engine.global_train_step))
    rnn.finalize()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
