"""A published RETURNN config (tests/data/published) loaded as RETURNN loads
it, for building its network in this process: the config and its network
dict, RETURNN's behavior version as the file sets it (none: 0).

The published files are older than the pinned RETURNN and TensorFlow; what
they need to load at all is done here, and changes nothing in the network:
the 2019 file imports `Pretrain` through RETURNN's old module names, and
calls TF 1 names (tf.random_uniform, tf.log) in its SpecAugment, aliased to
tf.compat.v1.
"""

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")


def load_published(config_path, change=None):
    """(Config, network dict) of a config file, with RETURNN set up for TF graph mode
    and its behavior version reset to the file's. change(name, layer dict) -> layer
    dict, if given, is applied to every top-level layer (a test's stated deviation)."""
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
    BehaviorVersion._reset()
    if config.has("behavior_version"):
        BehaviorVersion.set(config.int("behavior_version", 0))
    network = config.typed_value("network")
    if change:
        network = {name: change(name, layer) for name, layer in network.items()}
    return config, network
