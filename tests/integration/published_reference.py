"""RETURNN's own run of a published network (tests/data/published), for
test_published.py: the published config's network is built in
evaluation (TF, RETURNN's behavior version as the file sets it, none; the
changes in DEVIATIONS, each with its reason), its params are initialized
(biases, norms and running statistics moved by seeded noise) and saved as a
RETURNN checkpoint, and the log-probabilities of its softmax layer OUTPUT on
every sequence of an HDF file, in one batch, are written to an .npz (key: the
sequence's tag). A decoder's softmax (OUTPUT "output/output_prob") runs in
evaluation without search: on the file's labels (teacher forcing).

Usage: published_reference.py CONFIG DATA.hdf OUT_DIR OUTPUT [LAYER ...]
  OUT_DIR/published.*: the checkpoint (TF, as RETURNN saves it)
  OUT_DIR/reference.npz: the log-probabilities; with LAYER names, also those layers'
    outputs (batch major), under 'LAYER/tag' (without a batch axis: 'LAYER'),
    for finding a difference

A process of its own: RETURNN's global state (the behavior version, the batch
dim) must not mix with retc's networks.

The published files are older than the pinned RETURNN and TensorFlow; what
they need to load at all changes nothing in the network: the 2019 file
imports `Pretrain` through RETURNN's old module names, and calls TF 1 names
(tf.random_uniform, tf.log) in its SpecAugment, aliased to tf.compat.v1.
"""

import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy

# What the test changes in a published network for the comparison, by layer
# class: (the changed layer dict, why). Every other layer is built as the file
# says. The batch's longest sequence reads no frame past its end: for it, the
# last two change nothing.
DEVIATIONS = {
    "batch_norm": (
        lambda layer: dict(layer, update_sample_only_in_training=True, delay_sample_update=True),
        "the file has no behavior_version, and RETURNN's batch_norm below version 12 updates its "
        "running statistics in evaluation too, before it uses them (momentum 0.99: almost the "
        "batch's own statistics, and each batch changes the checkpoint's values for the next); "
        "set to RETURNN's current semantics, retc's: evaluation uses the stored statistics"),
    "conv": (
        lambda layer: dict(layer, use_time_mask=True),
        "RETURNN's conv layer reads the frames past a sequence's end as they are (not zeros: "
        "a bias and swish before it leave values there), so a shorter sequence's last frames "
        "depend on what else is in the batch; with RETURNN's use_time_mask they read zeros, as "
        "retc's convolutions do on both targets"),
    "pool": (
        lambda layer: {"class": "subnetwork", "from": layer["from"], "subnetwork": {
            "pool": dict(layer, **{"from": "data", "use_time_mask": True}),
            "output": {"class": "seq_len_mask", "from": "pool", "axis": "T", "mask_value": 0.0}}},
        "RETURNN's max pool reads the frames past a sequence's end as they are (an LSTM's zeros), "
        "so a window at a shorter sequence's end takes max(its frames, 0); retc's pooling ignores "
        "those frames: RETURNN's masked pool (use_time_mask), then zeros past each end, as retc "
        "lowers it (a masked max pool leaves -inf there, which the next LSTM spreads as NaN)"),
}


def load_published(config_path, change):
    """(Config, network dict) of a config file, loaded as RETURNN loads it, for TF graph
    mode, its behavior version the file's (none: 0); change(name, layer dict) -> layer
    dict applied to every top-level layer."""
    import returnn.__old_mod_loader__  # noqa: F401
    import tensorflow as tf

    for name in ("random_uniform", "log"):
        if not hasattr(tf, name):
            setattr(tf, name, getattr(tf.compat.v1, name))
    from returnn.log import log
    from returnn.config import Config, set_global_config
    from returnn.util.basic import BehaviorVersion
    import returnn.tf.compat as tf_compat

    log.initialize(verbosity=[0])
    tf_compat.v1.disable_eager_execution()
    config = Config()
    config.load_file(config_path)
    set_global_config(config)
    if config.has("behavior_version"):
        BehaviorVersion.set(config.int("behavior_version", 0))
    network = {name: change(name, layer) for name, layer in config.typed_value("network").items()}
    return config, network


def perturbed(value, name, rng):
    """A variable's value for the test: RETURNN's initial value where that is random
    (weights); where it is a constant (biases, norms' scales and shifts, running
    statistics) that value moved by seeded noise, so that each of those params is
    checked too (a variance stays positive)."""
    if value.size > 1 and numpy.std(value) > 0:
        return value
    if "variance" in name:
        return (value * rng.uniform(0.5, 1.5, value.shape)).astype("float32")
    return (value + rng.normal(0.0, 0.1, value.shape)).astype("float32")


def read_hdf(path):
    """[(tag, {key: array})] of every sequence of an HDF file, in its order."""
    from returnn.datasets.hdf import HDFDataset

    dataset = HDFDataset(files=[path])
    dataset.init_seq_order(epoch=1)
    seqs, i = [], 0
    while dataset.is_less_than_num_seqs(i):
        dataset.load_seqs(i, i + 1)
        seqs.append((dataset.get_tag(i), {k: dataset.get_data(i, k) for k in dataset.get_data_keys()}))
        i += 1
    return seqs


def padded(arrays):
    """A batch-major padded array and the lengths."""
    lens = [len(a) for a in arrays]
    out = numpy.zeros((len(arrays), max(lens)) + arrays[0].shape[1:], dtype=arrays[0].dtype)
    for b, a in enumerate(arrays):
        out[b, :len(a)] = a
    return out, numpy.array(lens, dtype="int32")


def main(config_path, data_path, out_dir, output_layer, *layers):
    import tensorflow as tf

    def changed(name, layer):
        change, _why = DEVIATIONS.get(layer.get("class"), (lambda d: d, None))
        layer = change(layer)
        if "/" in output_layer and name == output_layer.split("/")[0]:
            # A layer in a decoder's loop is built in evaluation only where something reads
            # it: marked as an output (RETURNN's is_output_layer; nothing else changes).
            sub = output_layer.split("/")[1]
            layer["unit"] = dict(layer["unit"], **{sub: dict(layer["unit"][sub], is_output_layer=True)})
        return layer

    config, network = load_published(config_path, changed)
    from returnn.tf.network import TFNetwork

    seqs = read_hdf(data_path)
    rng = numpy.random.RandomState(7)
    with tf.Graph().as_default() as graph:
        net = TFNetwork(config=config, train_flag=False, eval_flag=True, search_flag=False)
        net.construct_from_dict(network)
        session = tf.compat.v1.Session(graph=graph)
        variables = net.get_params_list()
        session.run(tf.compat.v1.variables_initializer(variables))
        # One run to read and one to assign (each variable's initializer, its value fed):
        # a run per variable costs a new executor each, 30 s for the 12-block network.
        values = session.run(variables)
        session.run([v.initializer for v in variables],
                    feed_dict={v.initializer.inputs[1]: perturbed(value, v.name, rng)
                               for v, value in zip(variables, values)})
        tf.compat.v1.train.Saver(variables, max_to_keep=1).save(
            session, os.path.join(out_dir, "published"), write_meta_graph=False)
        feed = {}
        for key, data in net.extern_data.data.items():
            if key not in seqs[0][1]:
                continue
            x, lens = padded([s[key] for _, s in seqs])
            feed[data.placeholder] = x
            feed[data.get_sequence_lengths()] = lens
        output = net.get_layer(output_layer)
        log_probs = output.output.copy()
        if getattr(output, "output_before_activation", None) is not None:
            log_probs.placeholder = tf.nn.log_softmax(output.output_before_activation.x)
        else:  # in a loop: the softmax's output, stacked over the loop's frames
            log_probs.placeholder = tf.math.log(output.output.placeholder)
        fetch = {"log_probs": log_probs.copy_as_batch_major().placeholder}
        for name in layers:
            out = net.get_layer(name).output
            fetch[name] = (out.copy_as_batch_major() if out.have_batch_axis() else out).placeholder
        got = session.run(fetch, feed_dict=feed)
    arrays = {}
    for b, (tag, _) in enumerate(seqs):
        arrays[tag] = got["log_probs"][b]
        for name in layers:
            if net.get_layer(name).output.have_batch_axis():
                arrays["%s/%s" % (name, tag)] = got[name][b]
            else:
                arrays[name] = got[name]
    numpy.savez(os.path.join(out_dir, "reference.npz"), **arrays)
    print("published_reference: %d variables saved; %s's log-probabilities of %d sequences %s"
          % (len(variables), output_layer, len(seqs), got["log_probs"].shape))


if __name__ == "__main__":
    main(*sys.argv[1:])
