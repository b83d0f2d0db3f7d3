"""Run under torchrun by torch_nproc.sh: one rank of RETURNN's torch training
on a retc config (as `retc train --nproc` runs it), for one epoch into a model
dir of its own; then each rank writes its params to OUT/rank<R>.pt, so that
the test can compare the ranks' params, and the tags of the sequences it
trained on to OUT/rank<R>.seqs.txt.

Usage: torchrun --standalone --nproc_per_node=N torch_ddp_probe.py CONFIG OUT
"""

import os
import sys

import torch

import returnn.__main__ as rnn


def main(config, out):
    # The data loaded in the rank's own process (no data-loader worker), so that
    # the dataset here is the one the pipeline asks.
    rnn.init(config_filename=config, config_updates={
        "num_epochs": 1, "model": os.path.join(out, "model", "network"),
        "log": os.path.join(out, "returnn.%s.log" % os.environ["RANK"]),
        "torch_dataloader_opts": {"num_workers": 0}})
    # The tags of the sequences this rank trains on: what the data pipeline asks
    # the train dataset for, appended to a file of the rank's.
    seqs = os.path.join(out, "rank%s.seqs.txt" % os.environ["RANK"])
    cls, name = type(rnn.train_data), rnn.train_data.name
    get_tag = cls.get_tag

    def recording_get_tag(self, seq_idx):
        tag = get_tag(self, seq_idx)
        if self.name == name:
            with open(seqs, "a") as f:
                f.write("%s\n" % tag)
        return tag

    cls.get_tag = recording_get_tag
    rnn.execute_main_task()
    state = {k: v.detach().cpu() for k, v in rnn.engine._pt_model.state_dict().items()}
    torch.save(state, os.path.join(out, "rank%s.pt" % os.environ["RANK"]))
    print("rank %s: %d params after %d steps" % (os.environ["RANK"], len(state), rnn.engine.global_train_step))
    rnn.finalize()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
