"""Fresh random numbers and SpecAugment in RETURNN, on both backends.

fresh: nn::random_uniform / random_normal draw new numbers at every step (a
  training step is one session run on TF, one train_step call on torch) and,
  in a loop, at every frame; two networks seeded alike (as RETURNN's engines
  seed them from the config's random_seed) draw the same numbers, another
  random_seed other numbers.
specaugment: the masks of nn::specaugment_masks respect their options on a
  batch (count per sequence, widths, starts within the length; the mask is
  the union of the used slots), apply_masks zeroes exactly the masked frames
  and channels, nn::specaugment zeroes whole frames and channels in training
  and returns the input unchanged in evaluation.

Run alone as `python test_random.py fresh|specaugment`; ctest runs both in one process.
"""
# ctest-group: 2  (cases per process: tests/integration/cases.py)

import sys

import numpy

import torch  # noqa: F401  (before TensorFlow, see test_cross_backend.py)
import torch._dynamo  # noqa: F401
import torch_probe
import returnn_probe

FRESH = ("uniform", "normal", "per_frame")


def tf_seed(config_seed, epoch=1):
    """The network seed RETURNN's TF engine derives from random_seed (Engine._init_network)."""
    return (epoch * 3 + config_seed * 5 + 7) % (2**31)


class TfRunner:
    def __init__(self, model, train=True, config_seed=42):
        returnn_probe.reset_batch_dim()
        self.net = returnn_probe.Net(returnn_probe.compile_model(model, extra=("--seed", str(config_seed))),
                                     train_flag=train, rnd_seed=tf_seed(config_seed))
        self.feed = self.net.feed(5)

    def step(self, names):
        """One session run: {name: value (batch major)}."""
        with self.net.graph.as_default():
            outs = [self.net.net.get_layer(n).output for n in names]
            outs = [o.copy_as_batch_spatial_major() if o.have_batch_axis() else o for o in outs]
            values = self.net.session.run([o.placeholder for o in outs], feed_dict=self.feed)
        return dict(zip(names, values))

    def data(self):
        x = self.net.net.extern_data.data["data"]
        return self.feed[x.placeholder], self.feed[x.get_sequence_lengths()]

    def close(self):
        self.net.close()


class TorchRunner:
    def __init__(self, model, train=True, config_seed=42):
        import returnn.frontend as rf
        from returnn.torch.data import extern_data as extern_data_util
        from returnn.util.math import merge_random_seeds

        returnn_probe.reset_batch_dim()
        self.tnet = torch_probe.TorchNet(torch_probe.compile_model(model, extra=("--seed", str(config_seed))),
                                         with_updater=False)
        self.raw, template = self.tnet.batch(5)
        self.extern_data = extern_data_util.raw_dict_to_extern_data(
            self.raw, extern_data_template=template, device="cpu", with_eval_targets=True)
        self.train = train
        # As RETURNN's torch engine seeds at the start of epoch 1, step 0.
        rf.set_random_seed(merge_random_seeds([1, 0, self.tnet.config.int("random_seed", 42)]))
        self.x_dims = self.extern_data["data"].dims

    def step(self, names):
        import returnn.frontend as rf
        from returnn.tensor import batch_dim

        rf.init_train_step_run_ctx(train_flag=self.train, step=0, epoch=1)
        with torch.no_grad():
            out = self.tnet.config.typed_value("train_step")(model=self.tnet.model, extern_data=self.extern_data)
        values = {}
        for n in names:
            t = out[n]
            # batch first, then x's dims in x's order, then the rest
            order = sorted(t.dims, key=lambda d: (d != batch_dim, d not in self.x_dims,
                                                  self.x_dims.index(d) if d in self.x_dims else 0))
            values[n] = t.copy_transpose(order).raw_tensor.numpy()
        return values

    def data(self):
        return self.raw["data"].numpy(), self.raw["data:seq_len"].numpy()

    def close(self):
        pass


RUNNERS = (("torch", TorchRunner), ("tf", TfRunner))


def test_fresh():
    for backend, runner in RUNNERS:
        r = runner("op-fresh-random")
        a, b = r.step(FRESH), r.step(FRESH)
        _, lens = r.data()
        for n in FRESH:
            assert a[n].shape == b[n].shape, (backend, n)
            assert not numpy.allclose(a[n], b[n]), "%s: %s: the same numbers in two steps" % (backend, n)
        frames = a["per_frame"]  # [B, T, 2]
        assert frames.shape[1] >= 2, frames.shape
        assert not numpy.allclose(frames[:, 0], frames[:, 1]), "%s: the same numbers in two frames" % backend
        u = a["uniform"][0, : lens[0]]
        assert (u >= 0).all() and (u < 1).all(), (backend, u)
        r.close()
        again = runner("op-fresh-random")
        a2, b2 = again.step(FRESH), again.step(FRESH)
        for n in FRESH:
            returnn_probe.close(a2[n], a[n], 0, "%s: %s, rerun with the same seed, step 1" % (backend, n))
            returnn_probe.close(b2[n], b[n], 0, "%s: %s, rerun with the same seed, step 2" % (backend, n))
        again.close()
        other = runner("op-fresh-random", config_seed=7)
        c = other.step(FRESH)
        assert not numpy.allclose(c["uniform"], a["uniform"]), "%s: random_seed 7 drew seed 42's numbers" % backend
        other.close()
        print("%s: fresh per step (2 steps) and per frame (%d frames); same seed: same numbers, "
              "another seed: others" % (backend, frames.shape[1]))


def intervals(num, start, width, size):
    """The union of the first `num` slots [start, start + width), clipped to [0, size)."""
    m = numpy.zeros(size, bool)
    for k in range(int(num)):
        m[int(start[k]):min(int(start[k] + width[k]), size)] = True
    return m


MASK_NAMES = ("time_num", "time_start", "time_width", "time_mask", "feature_num", "feature_start",
              "feature_width", "feature_mask", "masked", "augmented", "mild_time_num", "mild_feature_num")


def test_specaugment():
    # op-specaugment: steps (0, 0, 0) (full strength), time masks 1..5 frames,
    # up to max(T // 10, 2) * 4 of them (at most 8); 40 features, masks 1..8 wide, 2 to 5 of them
    for backend, runner in RUNNERS:
        r = runner("op-specaugment")
        x, lens = r.data()
        v = r.step(MASK_NAMES)
        n_time, n_feat, total = 0, 0, 0
        for b, n in enumerate(lens):
            num = v["time_num"][b]
            lo, hi = min(2, n, 8), min(max(n // 10, 2) * 4, n, 8)
            assert lo <= num <= hi and num == int(num), (backend, b, n, num, lo, hi)
            k = int(num)
            assert (v["time_start"][b, :k] < n).all() and (v["time_start"][b, :k] >= 0).all()
            assert ((v["time_width"][b] >= 1) & (v["time_width"][b] <= 5)).all(), v["time_width"][b]
            expect = intervals(num, v["time_start"][b], v["time_width"][b], x.shape[1])
            assert (v["time_mask"][b, :n] == expect[:n]).all(), (backend, b, v["time_mask"][b], expect)
            fnum = v["feature_num"][b]
            assert 2 <= fnum <= 5, (backend, b, fnum)
            assert ((v["feature_width"][b] >= 1) & (v["feature_width"][b] <= 8)).all()
            fexpect = intervals(fnum, v["feature_start"][b], v["feature_width"][b], 40)
            assert (v["feature_mask"][b] == fexpect).all(), (backend, b)
            both = v["time_mask"][b, :n, None] | v["feature_mask"][b, None, :]
            returnn_probe.close(v["masked"][b, :n], numpy.where(both, 0, x[b, :n]), 0, backend + ": apply_masks")
            assert 0 <= v["mild_time_num"][b] <= 2 and 0 <= v["mild_feature_num"][b] <= 2, (backend, b)
            # specaugment in training: only zeroes, whole frames and whole channels
            aug, xb = v["augmented"][b, :n], x[b, :n]
            zeroed = (aug == 0) & (xb != 0)
            returnn_probe.close(aug[~zeroed], xb[~zeroed], 0, backend + ": specaugment keeps the rest")
            rows, cols = zeroed.all(axis=1), zeroed.all(axis=0)
            assert (zeroed == (rows[:, None] | cols[None, :])).all(), backend + ": not whole frames/channels"
            n_time += k
            n_feat += int(fnum)
            total += int(zeroed.sum())
        assert total > 0, backend + ": specaugment masked nothing in training"
        r.close()
        ev = runner("op-specaugment", train=False)
        x, _ = ev.data()
        aug = ev.step(("augmented",))["augmented"]
        returnn_probe.close(aug, x, 0, backend + ": specaugment in evaluation")
        ev.close()
        print("%s: %d sequences (lengths %s): %d time and %d feature masks within their options; "
              "training zeroed %d entries; evaluation: the input unchanged"
              % (backend, len(lens), list(lens), n_time, n_feat, total))


if __name__ == "__main__":
    {"fresh": test_fresh, "specaugment": test_specaugment}[sys.argv[1]]()
