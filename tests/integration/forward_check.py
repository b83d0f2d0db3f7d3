"""`retc forward`'s HDF against the model's output computed here: each
sequence of the HDF (RETURNN's HDFDataset reads it) equals, within 1e-5, the
output layer of the same checkpoint run in evaluation on that sequence of
the dataset, one sequence at a time (TF: the network of the compiled config
with the checkpoint loaded; torch: get_model, the checkpoint's state dict and
train_step without the training flag).

Run by tasks.sh as `python forward_check.py MODEL tf|torch CHECKPOINT OUT.hdf`.
"""

import sys

import numpy

import torch  # noqa: F401  (before TensorFlow, see test_cross_backend.py)
import torch._dynamo  # noqa: F401
import torch_probe
import returnn_probe

from returnn.datasets import init_dataset
from returnn.datasets.hdf import HDFDataset

TOL = 1e-5


def dataset_seqs(config_path):
    """{seq_tag: {key: array}} of the config's dev dataset."""
    from returnn.config import Config

    config = Config()
    config.load_file(config_path)
    dataset = init_dataset(config.typed_value("dev"))
    dataset.init_seq_order(epoch=1)
    seqs, i = {}, 0
    while dataset.is_less_than_num_seqs(i):
        dataset.load_seqs(i, i + 1)
        seqs[dataset.get_tag(i)] = {k: dataset.get_data(i, k) for k in dataset.get_data_keys()}
        i += 1
    return seqs


def tf_outputs(config_path, checkpoint, seqs):
    net = returnn_probe.Net(config_path, train_flag=False)
    with net.graph.as_default():
        net.net.load_params_from_file(checkpoint, session=net.session)
        data = net.net.extern_data.data["data"]
        out = net.net.get_layer("output").output.copy_as_batch_major()
        got = {}
        for tag, seq in seqs.items():
            x = seq["data"]
            feed = {data.placeholder: x[None], data.get_sequence_lengths(): [len(x)]}
            got[tag] = net.session.run(out.placeholder, feed_dict=feed)[0]
    return got


def torch_outputs(config_path, checkpoint, seqs):
    import returnn.frontend as rf
    from returnn.tensor import TensorDict
    from returnn.torch.data import extern_data as extern_data_util

    tnet = torch_probe.TorchNet(config_path, with_updater=False)
    tnet.pt_model.load_state_dict(torch.load(checkpoint, weights_only=False)["model"], strict=True)
    template = TensorDict()
    template.update(tnet.config.typed_value("extern_data"), auto_convert=True)
    got = {}
    for tag, seq in seqs.items():
        raw = {k: torch.tensor(v[None]) for k, v in seq.items()}
        raw.update({k + ":seq_len": torch.tensor([len(v)], dtype=torch.int32) for k, v in seq.items()})
        extern_data = extern_data_util.raw_dict_to_extern_data(
            raw, extern_data_template=template, device="cpu", with_eval_targets=True)
        rf.init_train_step_run_ctx(train_flag=False, step=0, epoch=1)
        with torch.no_grad():
            out = tnet.config.typed_value("train_step")(model=tnet.model, extern_data=extern_data)["output"]
        rest = [d for d in out.dims if not d.is_batch_dim()]
        dims = [d for d in out.dims if d.is_batch_dim()]
        dims += [d for d in rest if d.dimension is None] + [d for d in rest if d.dimension is not None]
        got[tag] = out.copy_transpose(dims).raw_tensor.numpy()[0]
    return got


def main(model, backend, checkpoint, hdf):
    binary = returnn_probe.os.environ["RETC"]
    config = (torch_probe if backend == "torch" else returnn_probe).compile_model(model, binary)
    seqs = dataset_seqs(config)
    got = (torch_outputs if backend == "torch" else tf_outputs)(config, checkpoint, seqs)
    written = HDFDataset(files=[hdf])
    written.init_seq_order(epoch=1)
    tags, i, worst = set(), 0, 0.0
    while written.is_less_than_num_seqs(i):
        written.load_seqs(i, i + 1)
        tag, value = written.get_tag(i), written.get_data(i, "data")
        assert tag in got, "the HDF has a sequence %r the dataset lacks" % tag
        assert value.shape == got[tag].shape, (tag, value.shape, got[tag].shape)
        worst = max(worst, float(numpy.abs(value - got[tag]).max()))
        tags.add(tag)
        i += 1
    assert tags == set(got), "the HDF has %d of the dataset's %d sequences" % (len(tags), len(got))
    print("%s (%s): the HDF's %d sequences equal the model's outputs, max |diff| = %.3g" % (
        model, backend, len(tags), worst))
    assert worst <= TOL, "max |diff| %g > %g" % (worst, TOL)


if __name__ == "__main__":
    main(*sys.argv[1:])
