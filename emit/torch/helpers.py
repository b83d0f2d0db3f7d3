"""Helpers of retc's torch target: the Python that its configs call.

Each top-level definition here is copied into a config that uses it (and
those it calls), in this order; a config holds no helper it does not use, so
it stays self-contained for `python -m returnn`. The names these refer to
(rf, torch, numpy, Dim, ForwardCallbackIface, ...) are the config's imports
(emit/torch/config.cc). Definitions are separated by two blank lines; this
file is embedded in retc at build time and parsed by a unit test.
"""


class _Module(rf.Module):
    """A module of retc's model tree: it holds params and submodules by name."""


def _add_param(root, path, param):
    """Puts `param` at the dotted module path (its state_dict key)."""
    *parents, name = path.split(".")
    module = root
    for part in parents:
        if not hasattr(module, part):
            setattr(module, part, _Module())
        module = getattr(module, part)
    setattr(module, name, param)


def _param(root, path):
    """The param at the dotted module path."""
    value = root
    for part in path.split("."):
        value = getattr(value, part)
    return value


def _random_values(distribution, shape, a, b, seed, dtype):
    """Seeded random initial values: uniform in [a, b), normal or truncated normal
    (within 2 stddevs) with mean a and stddev b; the same on every run (torch's CPU
    generator seeded with `seed`, drawn in `dtype`)."""
    gen = torch.Generator().manual_seed(seed)
    value = torch.empty(shape, dtype=getattr(torch, dtype))
    if distribution == "uniform":
        return value.uniform_(a, b, generator=gen)
    value.normal_(a, b, generator=gen)
    while distribution == "truncated_normal":
        outside = (value - a).abs() > 2 * b
        count = int(outside.sum())
        if not count:
            break
        value[outside] = torch.empty(count, dtype=value.dtype).normal_(a, b, generator=gen)
    return value


def _random(distribution, dims, a, b, seed, dtype):
    """_random_values over dims, as a tensor."""
    value = _random_values(distribution, [d.dimension for d in dims], a, b, seed, dtype)
    return rf.convert_to_tensor(value, dims=dims)


def _randoms(specs):
    """The tensors of the specs (distribution, dims, a, b, seed, dtype), drawn in
    threads: torch lets go of the GIL while it draws, and each spec has its own
    generator, so the values are those drawn one by one."""
    import concurrent.futures
    import os

    def draw(spec):
        distribution, dims, a, b, seed, dtype = spec
        return _random_values(distribution, [d.dimension for d in dims], a, b, seed, dtype)

    with concurrent.futures.ThreadPoolExecutor(max_workers=min(len(specs), os.cpu_count() or 1)) as pool:
        values = list(pool.map(draw, specs))
    return [rf.convert_to_tensor(v, dims=spec[1]) for v, spec in zip(values, specs)]


def _softplus(x):
    """log(1 + exp(x)), computed stably (rf has no softplus)."""
    return rf.Tensor("softplus", dims=x.dims, dtype=x.dtype,
                     raw_tensor=torch.nn.functional.softplus(x.raw_tensor))


def _normalize(x, *, axis, epsilon, scale=None, bias=None):
    """(x - mean) / sqrt(variance + epsilon) over axis, the variance biased (TF's
    norm layer), then times scale and plus bias (over axis) where given; over
    one static dim torch's fused layer norm computes it, its affine included."""
    if len(axis) != 1 or axis[0].dimension is None:
        y = rf.normalize(x, axis=axis, epsilon=epsilon)
        y = y if scale is None else rf.combine(y, "mul", scale, allow_broadcast_all_sources=True)
        return y if bias is None else rf.combine(y, "add", bias, allow_broadcast_all_sources=True)
    dims = [d for d in x.dims if d != axis[0]] + [axis[0]]
    x = x.copy_transpose(dims)
    y = torch.nn.functional.layer_norm(x.raw_tensor, (axis[0].dimension,), eps=epsilon,
                                       weight=None if scale is None else scale.raw_tensor,
                                       bias=None if bias is None else bias.raw_tensor)
    return rf.Tensor("normalize", dims=dims, dtype=x.dtype, raw_tensor=y)


def _fused_weight_norm(raw, kept):
    """Whether torch's fused weight-norm kernel computes norms of `raw` over all
    dims but `kept`: one kept dim, the first or last, float32 or float64, and not
    in an ONNX export (the kernel has no ONNX op; vector_norm is ReduceL2)."""
    return (len(kept) == 1 and kept[0] in (0, raw.dim() - 1) and raw.dtype in (torch.float32, torch.float64)
            and not torch.onnx.is_in_onnx_export())


def _kept_dim_norms(v, dim):
    """The L2 norms of v over every dim but `dim` (its first or last). Over all
    but the last (a weight [in, out] normed over in): ‖v‖² = rows · (var + mean²)
    from the columns' mean and biased variance by torch's batch-norm statistics
    kernel, one vectorized pass over v that writes nothing v-sized; torch's
    fused weight-norm kernel also writes a w (unused here), and in a 12-block
    Conformer's step at 2 x 200 its 86 calls took 35 ms against 15 (self time,
    torch.profiler). Both terms are positive (no cancellation): within 6e-7 of
    float64, as the kernel's; entries below about 1e-19 have subnormal squares
    (7e-6). Else that fused kernel."""
    if dim == v.dim() - 1 and v.dim() >= 2:
        rows = v.reshape(-1, v.shape[-1])
        mean, var = torch.batch_norm_update_stats(rows, None, None, 0.0)
        return mean.mul_(mean).add_(var).mul_(rows.shape[0]).sqrt_()
    return torch._weight_norm_interface(v, v.new_ones(v.shape[dim]), dim)[1]


class _KeptDimNorm(torch.autograd.Function):
    """The L2 norms of v over every dim but `dim` (its first or last), by
    _kept_dim_norms: one vectorized pass over v, where
    torch.linalg.vector_norm's reduction over a leading dim took 7x as long
    (the 84 weights of a 12-block Conformer: 14 ms against 94-103 here). Backward: v times
    the norms' gradient over the norms, 0 where a norm is 0."""

    @staticmethod
    def forward(ctx, v, dim):
        n = _kept_dim_norms(v, dim)
        ctx.save_for_backward(v, n)
        ctx.dim = dim
        return n

    @staticmethod
    def backward(ctx, grad):
        v, n = ctx.saved_tensors
        shape = [1] * v.dim()
        shape[ctx.dim] = n.shape[0]
        return v * torch.where(n > 0, grad / n, 0.0).view(shape), None


def _norm(x, *, axis):
    """The L2 norm over `axis`: sqrt(sum(x^2)), without an x-sized square: over
    all dims but the first or last of x, _KeptDimNorm; else
    torch.linalg.vector_norm."""
    if not axis:
        return rf.abs(x)
    kept = [i for i, d in enumerate(x.dims) if d not in axis]
    raw = x.raw_tensor
    if _fused_weight_norm(raw, kept):
        raw = _KeptDimNorm.apply(raw, kept[0])
    else:
        raw = torch.linalg.vector_norm(raw, dim=[x.dims.index(d) for d in axis])
    return rf.Tensor("norm", dims=[d for d in x.dims if d not in axis], dtype=x.dtype, raw_tensor=raw)


class _WeightNormFold(torch.autograd.Function):
    """(x v) g / ‖v‖ for x [rows, in] and v [in, out], ‖v‖ over in, as one step
    of autograd: the norms (_kept_dim_norms), one matmul, its product scaled per column. Backward: dx and dv by one
    matmul each with the scaled gradient, and v's share through the norms
    added to dv in place (no v-sized tensor between)."""

    @staticmethod
    def forward(ctx, x, v, g):
        n = _kept_dim_norms(v, 1).reshape(-1)
        s = g / n
        y = torch.mm(x, v)
        ctx.save_for_backward(x, v, g, n, s, y)
        return y * s

    @staticmethod
    def backward(ctx, dy):
        x, v, g, n, s, y = ctx.saved_tensors
        dys = dy * s
        ds = (dy * y).sum(0)  # the gradient of s = g / ‖v‖
        dx = torch.mm(dys, v.t()) if ctx.needs_input_grad[0] else None
        dv = None
        if ctx.needs_input_grad[1]:
            dv = torch.mm(x.t(), dys)
            dv.addcmul_(v, -ds * s / (n * n))  # d‖v‖/dv = v / ‖v‖
        return dx, dv, ds / n


def _autocast(raw):
    """Whether autocast (mixed precision) is on for raw's device."""
    try:
        return torch.is_autocast_enabled(raw.device.type)
    except TypeError:  # a torch without the device argument
        return torch.is_autocast_enabled()


def _weight_norm_dot(x, v, g, *, axis, reduce):
    """x · (g v / ‖v‖), ‖v‖ over axis (expand-parametrizations' weight-norm fold).
    Three ways, the cheapest for the shapes:
    - a 2-D v [in, out] with ‖v‖ over in, where x has at most in/2 rows (frames
      times sequences: a small batch): _WeightNormFold, which makes no w and
      scales the product instead. A 12-block Conformer at 2 x 200 (100 rows):
      its step 0.94 of the fused kernel's, in one process taking turns;
      at 4 x 500 (500 rows) the two were alike, and the fold's scaling grows
      with the batch.
    - else over all dims of v but its first or last: w = g v / ‖v‖ made by
      torch's fused kernel (torch._weight_norm: one pass over v, and one fused
      pass back), then one matmul.
    - else the fold in rf's ops: (x · v) · (g / ‖v‖)."""
    kept = [i for i, d in enumerate(v.dims) if d not in axis]
    raw = v.raw_tensor
    if (len(reduce) == 1 and kept == [1] and v.dims[0] == reduce[0] and raw.dtype in (torch.float32, torch.float64)
            and g.raw_tensor.numel() == raw.shape[1] and x.raw_tensor.dtype == raw.dtype and not _autocast(raw)
            and not torch.jit.is_tracing() and not torch.onnx.is_in_onnx_export()):
        others = [d for d in x.dims if d != reduce[0]]
        xr = x.copy_transpose(others + list(reduce)).raw_tensor
        rows = xr.numel() // raw.shape[0]
        if 2 * rows <= raw.shape[0]:
            y = _WeightNormFold.apply(xr.reshape(rows, raw.shape[0]), raw, g.raw_tensor.reshape(-1))
            return rf.Tensor("weight_norm_dot", dims=others + [v.dims[1]], dtype=x.dtype,
                             raw_tensor=y.reshape(*xr.shape[:-1], raw.shape[1]))
    if _fused_weight_norm(raw, kept):
        w = torch._weight_norm(raw, g.raw_tensor.reshape(-1), kept[0])
        return rf.matmul(x, rf.Tensor("weight", dims=v.dims, dtype=v.dtype, raw_tensor=w), reduce=reduce)
    return rf.combine(_unprime(rf.matmul(x, v, reduce=reduce)), "mul", g / _unprime(_norm(v, axis=axis)),
                      allow_broadcast_all_sources=True)


def _weight_dropout(w, rate):
    """Dropout on a weight, a new mask at each training step; w itself in evaluation."""
    return rf.dropout(w, rate, axis=w.dims)


def _weight_noise(w, stddev):
    """Gaussian noise on a weight, new at each training step; w itself in evaluation."""
    if not rf.get_run_ctx().train_flag:
        return w
    return w + rf.random_normal(w.dims, stddev=stddev, dtype=w.dtype)


def _apply_param_options(model, options):
    """retc's param options that RETURNN's torch engine has no config entry for,
    as TF's RETURNN applies them (see README, "Parameters"): per-param gradient
    clipping (each entry of the gradient clipped to [-c, c]) and decoupled
    weight decay (before each optimizer step, after the gradients are computed:
    w <- w - 2*lambda*w)."""
    decayed = []
    for path, opts in options.items():
        raw = _param(model, path).raw_tensor
        if "gradient_clip" in opts:
            raw.register_hook(lambda grad, c=opts["gradient_clip"]: grad.clamp(-c, c))
        if "decoupled_weight_decay" in opts:
            decayed.append((raw, opts["decoupled_weight_decay"]))
    global _decay_hook
    if _decay_hook is not None:
        _decay_hook.remove()  # a new model replaces the previous one
        _decay_hook = None
    if decayed:
        def decay(_optimizer, _args, _kwargs):
            with torch.no_grad():
                for raw, lam in decayed:
                    raw.mul_(1.0 - 2.0 * lam)

        from torch.optim.optimizer import register_optimizer_step_pre_hook

        _decay_hook = register_optimizer_step_pre_hook(decay)


_decay_hook = None


def _coupled_weight_decay(model, options):
    """Coupled weight decay, as TF's RETURNN adds it to the loss: sum of lambda * sum(w^2)."""
    terms = [rf.reduce_sum(rf.square(_param(model, path)), axis=_param(model, path).dims)
             * opts["coupled_weight_decay"]
             for path, opts in options.items() if "coupled_weight_decay" in opts]
    total = terms[0]
    for term in terms[1:]:
        total = total + term
    return total


def _param_groups(*, model, rf_model, **_kwargs):
    """The optimizer's param groups: one per learning-rate multiplier."""
    groups = {}
    for name, param in rf_model.named_parameters():
        k = _param_options.get(name, {}).get("learning_rate_multiplier", 1.0)
        groups.setdefault(k, []).append(param.raw_tensor)
    return [{"params": params, "learning_rate_multiplier": k} for k, params in sorted(groups.items())]


def _torch_gate_order(w, gates, out_dim):
    """w with its gate blocks reordered from retc's layout (TF's NativeLstm2:
    cell input, input, forget, output gate) to torch's (input, forget, cell
    input, output), so that one checkpoint means the same LSTM on both targets."""
    n = out_dim.dimension
    order = numpy.concatenate([numpy.arange(n, 3 * n), numpy.arange(0, n), numpy.arange(3 * n, 4 * n)])
    indices = rf.convert_to_tensor(order.astype("int32"), dims=[gates], sparse_dim=gates, device=w.device)
    return rf.gather(w, indices=indices, axis=gates)


def _lstm_padded(x, w, w_re, b, h0, c0, *, axis, batch_dims, in_dim, gates, out_dim):
    """_lstm's frames without rf's packed sequence: torch.lstm over the padded
    frames. Each sequence's frames are the same: those after its end come later (a
    forward LSTM; a backward one reads the reversed sequence); those are set to 0, as
    rf's packed LSTM and TF's NativeLstm2 give them (an average pool reads them). The
    final state would differ, so with_state takes rf's way. On the CPU this is oneDNN's
    fused LSTM (aten::mkldnn_rnn_layer), where a packed sequence takes torch's
    step-by-step path: a 10-unit LSTM over 10 sequences of up to 150 frames,
    forward and backward, 1.3-1.6 ms against 20.5. In an ONNX export the sizes are
    taken from the tensors (rf's LSTM takes the packed batch size as a Python number,
    which tracing makes a constant)."""
    raw = x.copy_transpose([axis] + batch_dims + [in_dim]).raw_tensor
    flat = raw.reshape(raw.shape[0], -1, raw.shape[-1])
    state = [s.copy_transpose(batch_dims + [out_dim]).raw_tensor.reshape(1, flat.shape[1], -1).to(raw.dtype)
             for s in (h0, c0)]
    half = b.raw_tensor * 0.5  # as rf's LSTM: half the bias each for torch's two
    params = (w.copy_compatible_to_dims([gates, in_dim]).raw_tensor,
              w_re.copy_compatible_to_dims([gates, out_dim]).raw_tensor, half, half)
    out, _, _ = torch.lstm(flat, tuple(state), params, True, 1, 0.0, False, False, False)
    out = out.reshape(list(raw.shape[:-1]) + [out.shape[-1]])
    y = rf.Tensor("lstm", dims=[axis] + batch_dims + [out_dim], raw_tensor=out, feature_dim=out_dim,
                  dtype=x._raw_backend.get_dtype_name_raw(out))  # bfloat16 under autocast (--amp), as rf's
    return y.copy_masked(0.0, dims=[axis])


def _lstm(x, w, w_re, b, *, axis, out_dim, backward, initial=None, with_state=False):
    """An LSTM over `axis` with retc's params w [in, 4*out], w_re [out, 4*out],
    b [4*out], gates in TF's order (see _torch_gate_order), from the state `initial`
    ((h, c); default zeros). with_state: also the state (h, c) after each sequence's
    last frame (backward: its first)."""
    in_dim, gates = w.dims
    w, w_re, b = (_torch_gate_order(v, gates, out_dim) for v in (w, w_re, b))
    if backward:
        x = rf.reverse_sequence(x, axis=axis)
    batch_dims = [d for d in x.dims if d not in (axis, in_dim)]
    if initial is None:
        initial = (rf.zeros(batch_dims + [out_dim]),) * 2
    h0, c0 = (rf.expand_dims(s, [d for d in batch_dims if d not in s.dims]) for s in initial)
    if not with_state:
        y = _lstm_padded(x, w, w_re, b, h0, c0, axis=axis, batch_dims=batch_dims, in_dim=in_dim,
                         gates=gates, out_dim=out_dim)
        return rf.reverse_sequence(y, axis=axis) if backward else y
    y, final = x._raw_backend.lstm(
        source=x, state_c=c0, state_h=h0,
        ff_weight=w.copy_compatible_to_dims([gates, in_dim]),
        rec_weight=w_re.copy_compatible_to_dims([gates, out_dim]),
        bias=b, spatial_dim=axis, in_dim=in_dim, out_dim=out_dim)
    if backward:
        y = rf.reverse_sequence(y, axis=axis)
    return (y, final) if with_state else y


def _unprime(x):
    """x with each later occurrence of a dim (see _primed) renamed back to the
    dim, where x has it only once (a product with a square weight)."""
    for occurrence, dim in _primed:
        if occurrence in x.dims and dim not in x.dims:
            x = rf.replace_dim_v2(x, in_dim=occurrence, out_dim=dim)
    return x


def _windowed(y, computed, model_dims, in_dims, same_strides=None):
    """A conv's or pool's output with the out dims rf computed renamed to the
    model's. A dynamic model dim that is not an input dim (time_s2 of a
    strided conv) is made here, with this batch's lengths: rf's, or with
    "same" padding (same_strides) TF's ceil(n / stride) of a sequence of n
    (the padding follows the longest sequence, so rf's count for a shorter
    one can be a frame less)."""
    for i, (c, d) in enumerate(zip(computed, model_dims)):
        if c == d:
            continue
        if d.dimension is None and d not in in_dims:
            d.reset_eager()  # the lengths of the previous batch, and what was cached from them
            if same_strides is None:
                d.dyn_size_ext = c.dyn_size_ext
            else:
                d.dyn_size_ext = (in_dims[i].dyn_size_ext + (same_strides[i] - 1)) // same_strides[i]
        y = rf.replace_dim_v2(y, in_dim=c, out_dim=d)
    return y


def _masked_select(x, mask, *, axis, out_dim):
    """The frames of x along `axis` where `mask` (within the lengths), packed per
    sequence into the model's dynamic `out_dim`, with this batch's lengths."""
    y, packed = rf.masked_select(x, mask=mask, dims=[axis])
    out_dim.reset_eager()
    out_dim.dyn_size_ext = packed.dyn_size_ext
    return rf.replace_dim_v2(y, in_dim=packed, out_dim=out_dim)


def _repeat(x, reps, *, axis, out_dim):
    """Each frame of x along `axis` repeated reps times (a scalar, or per frame)
    into the model's dynamic `out_dim`, with this batch's lengths."""
    lens_dims = axis.dyn_size_ext.dims if axis.dyn_size_ext is not None else ()
    for d in [d for d in lens_dims if d not in reps.dims] + ([axis] if axis not in reps.dims else []):
        reps = rf.expand_dim(reps, d)  # a count per frame, over the axis's lengths' dims
    y, packed = rf.repeat(x, in_spatial_dim=axis, repeats=reps)
    out_dim.reset_eager()
    out_dim.dyn_size_ext = packed.dyn_size_ext
    return rf.replace_dim_v2(y, in_dim=packed, out_dim=out_dim)


def _length(x, axis):
    """The lengths of the sequences along `axis` (int32 [batch]) on x's device."""
    return rf.copy_to_device(axis.get_size_tensor(), x.device)


class _Search:
    """A loop over a new axis: which sequences ended (after the frame where their end
    condition held, that frame included), and their lengths. With a beam `size`, the
    beam search of the loop's choice: the `size` best hypotheses by their summed
    log-probs (a dim "beam" after the first choice), with `length_normalization`
    by those divided by their lengths (as RETURNN's ChoiceLayer: at frame t an
    ended hypothesis's score is scaled by (t + 1) / t, so that every score is its
    sum / length times t + 1); `follow` takes a value of the hypotheses before
    this frame's choice to those after it."""

    def __init__(self, size=None, length_normalization=False):
        self.size, self.length_normalization = size, length_normalization
        self.beam = self.prev = self.backrefs = self.scores = None
        self.ended = self.lengths = None
        self.t = 0

    def choose(self, log_probs, labels):
        if self.ended is not None:
            # An ended hypothesis goes on with label 0 at no cost, and only so.
            first = rf.compare(rf.range_over_dim(labels, device=log_probs.device), "==", 0)
            # (log_probs may lack the beam: the same for every hypothesis.)
            log_probs = rf.where(self.ended, rf.where(first, 0.0, float("-inf")), log_probs,
                                 allow_broadcast_all_sources=True)
            if self.length_normalization and self.scores is not None:
                self.scores = rf.where(self.ended, self.scores * ((self.t + 1) / self.t), self.scores)
        self.t += 1
        scores = log_probs if self.scores is None else self.scores + log_probs
        size = labels.dimension * (1 if self.beam is None else self.beam.dimension)
        axes = labels if self.beam is None else [self.beam, labels]
        k = min(self.size, size)
        self.scores, indices, beam = rf.top_k(scores, axis=axes, k=k, k_dim=Dim(k, name="beam"))
        self.prev, self.beam = self.beam, beam
        if self.prev is None:
            self.backrefs, choice = None, indices
        else:
            self.backrefs, choice = indices
        self.ended, self.lengths = self.follow(self.ended), self.follow(self.lengths)
        return choice

    def follow(self, x):
        if isinstance(x, tuple):  # _cum_concat's accumulated frames and their dim
            return (self.follow(x[0]),) + x[1:]
        if x is None or self.backrefs is None or self.prev not in x.dims:
            return x
        return rf.gather(x, indices=self.backrefs, axis=self.prev)

    def follow_all(self, frames):
        return [self.follow(f) for f in frames]

    def end(self, done, t):
        if self.ended is None:
            self.lengths = rf.zeros(done.dims, dtype="int32", device=done.device) + (t + 1)
            self.ended = done
            return
        self.lengths = rf.where(self.ended, self.lengths, t + 1)
        self.ended = rf.logical_or(self.ended, done)

    def end_at_length(self, axis, t):
        """A loop over the existing `axis`: each sequence's hypotheses end after its last frame."""
        lengths = axis.dyn_size_ext
        if self.scores is not None and lengths.device != self.scores.device:  # on a GPU
            lengths = rf.copy_to_device(lengths, self.scores.device)
        self.end(rf.compare(lengths, "<=", t + 1), t)

    def all_ended(self):
        return bool(rf.reduce_all(self.ended, axis=self.ended.dims).raw_tensor)

    def stack(self, frames, *, axis, keep_lengths=False):
        """The frames stacked along `axis` (the best hypothesis's, with a beam), and
        `axis` given their lengths (keep_lengths: an existing axis keeps its own)."""
        y, stacked = rf.stack(frames)
        lengths = self.lengths
        if self.beam is not None:
            best = rf.reduce_argmax(self.scores, axis=self.beam)
            y = rf.gather(y, indices=best, axis=self.beam)
            if self.beam in lengths.dims:  # else an end of every hypothesis alike (a length)
                lengths = rf.gather(lengths, indices=best, axis=self.beam)
        if keep_lengths:
            return rf.replace_dim_v2(y, in_dim=stacked, out_dim=axis)
        axis.reset_eager()
        axis.dyn_size_ext = rf.copy_to_device(lengths, "cpu")
        return rf.replace_dim_v2(y, in_dim=stacked, out_dim=axis)


def _cum_concat(x, acc, *, out_dim, t):
    """The frames of x so far along the model's `out_dim` (t + 1 of them): `acc`, the
    frames before (with its own dim), then x. Returns (value, accumulated)."""
    one = Dim(1, name="frame")
    x = rf.expand_dim(x, one)
    if acc is not None:
        x, one = rf.concat((acc[0], acc[1]), (x, one), allow_broadcast=True)
    out_dim.reset_eager()
    out_dim.dyn_size_ext = rf.convert_to_tensor(t + 1, dims=(), dtype="int32", device="cpu")
    return rf.replace_dim_v2(x, in_dim=one, out_dim=out_dim), (x, one)


def _pad_same(x, *, axes, sizes, strides, dilation, value, out_dims=None):
    """TF's "same" padding, explicitly: along each axis of n frames, k - 1 - (n - 1) % s
    frames in all (k the dilated window), the odd one on the right."""
    pads = []
    for axis, k, s in zip(axes, sizes, strides):
        if s == 1:  # (k - 1) * dilation, whatever the length (an ONNX export traces no length)
            total = (k - 1) * dilation
        else:
            if torch.jit.is_tracing() and axis.dimension is None:
                raise ValueError(
                    "ONNX export: a strided conv with \"same\" padding over the dynamic axis %s pads by its "
                    "length modulo the stride (TF's way), which tracing would fix at the example's length"
                    % axis.name)
            n = int(x.raw_tensor.shape[x.dims.index(axis)])
            total = max((k - 1) * dilation - (n - 1) % s, 0)
        pads.append((total // 2, total - total // 2))
    if not any(left or right for left, right in pads):
        return x, axes
    # The right padding of a dynamic axis goes after each sequence's end: the
    # frames between it and the tensor's end are masked to the same value.
    return rf.pad(x, axes=axes, padding=pads, value=value, out_dims=out_dims)


def _conv_same_traced(x, w, b, *, in_dim, out_dim, axes, out_axes, kernel, strides, dilation, groups):
    """_conv's "same" for an ONNX export (torch.onnx traces the step) where a dynamic
    axis is strided: TF pads it by its length modulo the stride, which the traced graph
    must compute from the tensor. So such an axis is padded by the most TF ever pads on
    its left (and enough on its right), convolved with stride 1, and every stride-th
    frame taken from the offset that TF's padding of this length gives: _conv's frames."""
    pads, conv_strides, picks = [], [], []
    for axis, k, s in zip(axes, [k.dimension for k in kernel], strides):
        span = (k - 1) * dilation
        if s > 1 and axis.dimension is None:
            pads.append((span // 2, span - span // 2 + s - 1))
            conv_strides.append(1)
            picks.append((x.raw_tensor.shape[x.dims.index(axis)], span, s))
        else:
            n = int(x.raw_tensor.shape[x.dims.index(axis)]) if s > 1 else 1
            total = max(span - (n - 1) % s, 0)
            pads.append((total // 2, total - total // 2))
            conv_strides.append(s)
            picks.append(None)
    x, padded = rf.pad(x, axes=axes, padding=pads, value=0.0)
    y, computed = rf.conv(x, in_dim=in_dim, out_dim=out_dim, in_spatial_dims=padded, filter=w, filter_size=kernel,
                          padding="valid", strides=conv_strides, dilation_rate=dilation, groups=groups, bias=b,
                          use_mask=False)
    raw, dims, computed = y.raw_tensor, list(y.dims), list(computed)
    for i, pick in enumerate(picks):
        if pick is None:
            continue
        n, span, s = pick
        total = span - (n - 1) % s
        left = torch.maximum(total, torch.zeros_like(total)) // 2  # TF's, for this length (an int Max: ORT has no int Relu)
        frames = torch.arange((n + s - 1) // s) * s + (span // 2 - left)
        pos = dims.index(computed[i])
        raw = raw.index_select(pos, frames)
        d = out_axes[i]  # TF's lengths: ceil(n / stride) per sequence
        d.reset_eager()
        d.dyn_size_ext = (axes[i].dyn_size_ext + (s - 1)) // s
        dims[pos] = computed[i] = d
    y = rf.Tensor("conv", dims=dims, dtype=y.dtype, raw_tensor=raw, feature_dim=out_dim)
    return _windowed(y, computed, out_axes, axes)


def _conv(x, w, b, *, in_dim, out_dim, axes, out_axes, kernel, strides, dilation, groups, padding):
    """RETURNN's TF conv layer: frames past a sequence's end are 0 (masked),
    "same" pads as TF does; the model's out axes."""
    x = x.copy_masked(0.0, dims=[d for d in axes if d.dimension is None])
    in_axes = axes
    if padding == "same" and torch.jit.is_tracing() and any(
            s > 1 and a.dimension is None for a, s in zip(axes, strides)):
        return _conv_same_traced(x, w, b, in_dim=in_dim, out_dim=out_dim, axes=axes, out_axes=out_axes,
                                 kernel=kernel, strides=strides, dilation=dilation, groups=groups)
    if padding == "same":
        x, axes = _pad_same(x, axes=axes, sizes=[k.dimension for k in kernel], strides=strides,
                            dilation=dilation, value=0.0)
    y, computed = rf.conv(x, in_dim=in_dim, out_dim=out_dim, in_spatial_dims=axes, filter=w, filter_size=kernel,
                          padding="valid", strides=strides, dilation_rate=dilation, groups=groups, bias=b,
                          use_mask=False)
    return _windowed(y, computed, out_axes, in_axes, strides if padding == "same" else None)


def _window(x, *, axis, window_dim, out_axis, stride, padding, window_left=None):
    """RETURNN's TF window layer: each frame's window (centered with "same"
    padding), every stride-th; the model's out axis, with TF's lengths
    (windowed_dim's: ceil(n / stride) for "same")."""
    y, computed = rf.window(x, spatial_dim=axis, window_dim=window_dim, window_left=window_left,
                            padding=padding, stride=stride)
    return _windowed(y, [computed], [out_axis], [axis], [stride] if padding == "same" else None)


def _copy_dim(x, *, in_dim, out_dim):
    """x with the dynamic in_dim renamed to out_dim, which gets its lengths
    (once per batch: a second copy finds them set)."""
    lengths = in_dim.dyn_size_ext
    if out_dim.dyn_size_ext is None or out_dim.dyn_size_ext.raw_tensor is not lengths.raw_tensor:
        out_dim.reset_eager()
        out_dim.dyn_size_ext = lengths.copy()
    return rf.replace_dim_v2(x, in_dim=in_dim, out_dim=out_dim)


def _log_cumsum_exp(x, *, axis):
    """log(exp(x[0]) + ... + exp(x[t])) along axis (torch.logcumsumexp)."""
    y = torch.logcumsumexp(x.raw_tensor, dim=x.dims.index(axis))
    return rf.Tensor("log_cumsum_exp", dims=x.dims, dtype=x.dtype, raw_tensor=y)


def _range_of_lengths(lengths, *, out_dim):
    """The positions 0, 1, ... of the new dynamic out_dim, which gets this batch's
    `lengths` (int32 [B]) as its sizes (rf.range_over_dim)."""
    out_dim.reset_eager()
    out_dim.dyn_size_ext = lengths.copy()
    return rf.range_over_dim(out_dim, dtype="int32")


def _scatter(x, indices, *, axis, mode, fill):
    """x along axis combined by mode (sum, max, min) into the out dim at indices (sparse
    over it; rf.scatter): frames past axis's lengths and indices outside the out dim
    write nothing (their index becomes 0, their value the mode's neutral one); entries
    nothing writes are fill. Dims: the indices' (the out dim in place of axis), then x's."""
    import numpy

    out_dim = indices.sparse_dim
    missing = [d for d in indices.dims if d not in x.dims]
    if missing:
        x = x + rf.zeros(missing, dtype=x.dtype, device=x.device)
    valid = rf.logical_and(indices >= 0, indices < out_dim.get_dim_value())
    if axis.need_masking():
        valid = rf.logical_and(valid, axis.get_mask(dim_order=indices.dims, device=indices.device))
    if mode == "sum":
        neutral = 0
    elif "int" in x.dtype:
        info = numpy.iinfo(x.dtype)
        neutral = info.min if mode == "max" else info.max
    else:
        neutral = float("-inf") if mode == "max" else float("inf")
    index = rf.where(valid, indices, 0)
    out = rf.scatter(rf.where(valid, x, neutral), indices=index, indices_dim=axis, mode=mode,
                     fill_value=neutral, out_dim=out_dim, use_mask=False)
    count = rf.scatter(rf.cast(valid, "int32"), indices=index, indices_dim=axis, mode="sum",
                       out_dim=out_dim, use_mask=False)
    out = rf.where(count > 0, out, rf.convert_to_tensor(fill, dtype=x.dtype, device=x.device))
    dims = [out_dim if d == axis else d for d in indices.dims]
    return out.copy_transpose(dims + [d for d in out.dims if d not in dims])


def _pad(x, *, axis, left, right, value, out_dim):
    """x padded along axis (a dynamic one after each sequence's end, as TF's
    pad with handle_dynamic_dims); the model's out dim, with this batch's
    lengths (n + left + right)."""
    y, (computed,) = rf.pad(x, axes=[axis], padding=[(left, right)], value=value, handle_dynamic_dims=True)
    if out_dim.dimension is None:
        out_dim.reset_eager()
        out_dim.dyn_size_ext = axis.dyn_size_ext + (left + right)
    return rf.replace_dim_v2(y, in_dim=computed, out_dim=out_dim)


def _transposed_conv(x, w, b, *, in_dim, out_dim, axes, out_axes, kernel, strides):
    """RETURNN's TF transposed_conv ("valid" padding, filter [kernel..., out,
    in]): frames past a sequence's end are 0 (masked); the model's out axes."""
    x = x.copy_masked(0.0, dims=[d for d in axes if d.dimension is None])
    y, computed = rf.transposed_conv(x, in_dim=in_dim, out_dim=out_dim, in_spatial_dims=axes, filter=w,
                                     filter_size=kernel, padding="valid", strides=strides, bias=b,
                                     use_mask=False)
    for i, c in enumerate(computed):  # the lengths of a dynamic axis: n * stride + kernel - stride
        if c.dimension is None:
            c.dyn_size_ext = axes[i].dyn_size_ext * strides[i] + max(kernel[i].dimension - strides[i], 0)
    return _windowed(y, computed, out_axes, axes)


def _pool(x, *, mode, size, strides, padding, axes, out_axes):
    """RETURNN's TF pool layer: max pooling masks frames past a sequence's end
    (avg does not, as on TF) and sets them to 0 in its output; "same" pads as
    TF does, and avg pooling then
    averages over the window's frames within the tensor only (as TF)."""
    if mode == "max" and not torch.jit.is_tracing() and all(  # an ONNX export: rf's pool (its MaxPool)
            a.dimension is not None and k == s and a.dimension % k == 0 for a, k, s in zip(axes, size, strides)):
        return _max_pool_tiled(x, size=size, axes=axes, out_axes=out_axes)
    if mode == "max":
        x = x.copy_masked(float("-inf"), dims=[d for d in axes if d.dimension is None])
    count = None
    in_axes = axes
    if padding == "same":
        ones = rf.ones(x.dims, dtype=x.dtype) if mode == "avg" else None
        x, axes = _pad_same(x, axes=axes, sizes=size, strides=strides, dilation=1,
                            value=float("-inf") if mode == "max" else 0.0)
        if ones is not None and axes is not in_axes:
            ones, _ = _pad_same(ones, axes=in_axes, sizes=size, strides=strides, dilation=1, value=0.0,
                                out_dims=axes)
            count, _ = rf.pool(ones, mode="avg", pool_size=size, padding="valid", strides=strides,
                               in_spatial_dims=axes, use_mask=False)
    y, computed = rf.pool(x, mode=mode, pool_size=size, padding="valid", strides=strides, in_spatial_dims=axes,
                          use_mask=False)
    if count is not None:
        y = y / count
    y = _windowed(y, computed, out_axes, in_axes, strides if padding == "same" else None)
    if mode == "max":  # frames past the end: 0, not -inf (as on TF)
        y = y.copy_masked(0.0, dims=[d for d in out_axes if d.dimension is None])
    return y


def _max_pool_tiled(x, *, size, axes, out_axes):
    """Max pooling whose windows tile static axes (window = stride, dividing the
    axis: "same" pads nothing, no frame is past a sequence's end): each axis's
    frames viewed as [n / k, k] and the max over k, in x's own layout, one axis
    after the other (the max of a block is the max of its rows' maxima). The
    gradient goes to one frame of each window, as the pooling op's. rf's pool
    (torch's max_pool2d on x permuted into its layout) took 80 ms forward and
    backward for a 12-block Conformer's frontend at 8 x 500 frames, this 43-55."""
    raw, dims = x.raw_tensor, list(x.dims)
    for axis, k, out in zip(axes, size, out_axes):
        pos = dims.index(axis)
        if k > 1:
            raw = raw.unflatten(pos, (axis.dimension // k, k)).max(dim=pos + 1).values
        dims[pos] = out
    return rf.Tensor("pool", dims=dims, dtype=x.dtype, raw_tensor=raw,
                     feature_dim=x.feature_dim if x.feature_dim not in axes else None)


def _frames(axis):
    """How many frames a loop over axis runs in this batch (the longest sequence's)."""
    return int(axis.get_dim_value())


def _batch_major(x):
    """x's dims as the forward writers store a sequence: the batch dim, the dynamic dims,
    then the static ones (RETURNN's batch-spatial-major order)."""
    rest = [d for d in x.dims if d != batch_dim]
    return [batch_dim] + [d for d in rest if d.dimension is None] + [d for d in rest if d.dimension is not None]


class _HdfWriter(ForwardCallbackIface):
    """Writes the output `name` of each sequence to the HDF file `path` as RETURNN's TF
    forward task does (SimpleHDFWriter; HDFDataset reads it): `dim` is the feature dim's
    size (the number of classes if sparse), `ndim` the number of dims without the batch."""

    def __init__(self, path, name, dim, ndim):
        self.path, self.name, self.dim, self.ndim = path, name, dim, ndim
        self.writer = None

    def __getstate__(self):  # the data loader's worker gets the config, not the open file
        return dict(self.__dict__, writer=None)

    def init(self, *, model):
        from returnn.datasets.hdf import SimpleHDFWriter

        self.writer = SimpleHDFWriter(filename=self.path, dim=self.dim, ndim=self.ndim)

    def process_seq(self, *, seq_tag, outputs):
        out = outputs[self.name]
        value = out.raw_tensor
        seq_len = {i: numpy.array([value.shape[i]]) for i, d in enumerate(out.dims) if d.dimension is None}
        self.writer.insert_batch(inputs=value[None], seq_len=seq_len, seq_tag=[seq_tag])

    def finish(self):
        self.writer.close()


class _SearchWriter(ForwardCallbackIface):
    """Writes the labels `name` of each sequence to `path` in RETURNN's search output
    format "py": {seq_tag: "label label ...", ...}."""

    def __init__(self, path, name):
        self.path, self.name = path, name
        self.hyps = {}

    def init(self, *, model):
        self.hyps = {}

    def process_seq(self, *, seq_tag, outputs):
        self.hyps[seq_tag] = " ".join(str(int(v)) for v in outputs[self.name].raw_tensor)

    def finish(self):
        with open(self.path, "w") as f:
            f.write("{\n")
            for tag, hyp in self.hyps.items():
                f.write("%r: %r,\n" % (tag, hyp))
            f.write("}\n")


def _frame_error(logits, targets, axis):
    """1 where the best class is not the target, else 0."""
    return rf.cast(rf.not_equal(rf.reduce_argmax(logits, axis=axis), targets), "float32")


def _label_smoothed_ce(logits, targets, *, axis, label_smoothing):
    """Cross-entropy against smoothed targets, as TF's RETURNN computes it: the
    target class gets 1 - e, every other class e / (C - 1); minus the best
    value such targets allow (a constant)."""
    num_classes = axis.dimension
    confidence = 1.0 - label_smoothing
    low = label_smoothing / (num_classes - 1)
    normalizing = -(confidence * math.log(confidence) + (num_classes - 1) * low * math.log(low + 1e-20))
    log_probs = rf.log_softmax(logits, axis=axis)
    target_log_prob = rf.gather(log_probs, indices=targets, axis=axis)
    ce = -(confidence - low) * target_log_prob - low * rf.reduce_sum(log_probs, axis=axis)
    return ce - normalizing


def _focal(ce, logits, targets, *, axis, factor):
    """RETURNN's focal loss: each frame's loss times (1 - p_target)^factor."""
    p = rf.gather(rf.softmax(logits, axis=axis), indices=targets, axis=axis)
    return ce * (1.0 - p) ** factor


def _ctc_loss(logits, targets, *, axis, targets_axis, classes):
    """RETURNN's CTC loss per sequence, the blank last in `classes`; a
    sequence whose labels cannot align with its frames adds 0 (as on TF)."""
    logits = logits.copy()
    logits.feature_dim = classes
    return rf.ctc_loss(logits=logits, targets=targets, input_spatial_dim=axis,
                       targets_spatial_dim=targets_axis, blank_index=classes.dimension - 1)


def _ctc_error(logits, targets, *, axis, targets_axis, classes):
    """Edits between the greedy CTC decoding (repeats collapsed, blanks removed) and the targets."""
    labels, labels_axis = rf.ctc_greedy_decode(logits, in_spatial_dim=axis, blank_index=classes.dimension - 1,
                                               wb_target_dim=classes)
    return rf.cast(rf.edit_distance(labels, labels_axis, targets, targets_axis), "float32")


def _self_attention(x, qkv_weight, rel_table, *, axis, in_dim, key_dim, out_dim, num_heads, causal,
                    clipping=0, att_dropout=0.0):
    """RETURNN's TF self_attention layer, op for op: one matmul with the QKV
    weight, whose columns are per head [query | key | value]; queries scaled by
    key_dim_per_head^-0.5; relative positions (key_shift) from rel_table rows
    clip(j - i, -clipping, clipping) + clipping; keys past a sequence's end
    masked (causal: later keys); softmax over the keys; in training dropout on
    the weights (att_dropout, elementwise)."""
    qkv_dim = qkv_weight.dims[1]
    qkv = rf.matmul(x, qkv_weight, reduce=in_dim)
    heads = Dim(num_heads, name="heads")
    per_head = Dim(qkv_dim.dimension // num_heads, name="qkv_per_head")
    qkv = rf.split_dims(qkv, axis=qkv_dim, dims=[heads, per_head])
    key_per_head = Dim(key_dim.dimension // num_heads, name="key_per_head")
    key_per_head_k = Dim(key_dim.dimension // num_heads, name="key_per_head_k")
    value_per_head = Dim(out_dim.dimension // num_heads, name="value_per_head")
    q, k, v = rf.split(qkv, axis=per_head, out_dims=[key_per_head, key_per_head_k, value_per_head])
    k = rf.replace_dim_v2(k, in_dim=key_per_head_k, out_dim=key_per_head)
    q = q * (key_per_head.dimension ** -0.5)
    k, keys = rf.replace_dim(k, in_dim=axis)
    v = rf.replace_dim_v2(v, in_dim=axis, out_dim=keys)
    energy = rf.matmul(q, k, reduce=key_per_head)
    if rel_table is not None:
        rel_dim, rel_feature = rel_table.dims
        distance = rf.range_over_dim(keys) - rf.range_over_dim(axis)
        indices = rf.clip_by_value(distance, -clipping, clipping) + clipping
        indices.sparse_dim = rel_dim
        encoding = rf.gather(rel_table, indices=indices, axis=rel_dim)
        encoding = rf.replace_dim_v2(encoding, in_dim=rel_feature, out_dim=key_per_head)
        energy = energy + rf.matmul(q, encoding, reduce=key_per_head)
    if causal:
        mask = rf.range_over_dim(keys) <= rf.range_over_dim(axis)
    else:
        mask = rf.sequence_mask(keys)
    energy = rf.where(mask, energy, float("-inf"), allow_broadcast_all_sources=True)
    weights = rf.softmax(energy, axis=keys, use_mask=False)
    if att_dropout:
        weights = rf.dropout(weights, att_dropout, axis=weights.dims)
    y = rf.matmul(weights, v, reduce=keys, use_mask=False)  # masked keys have weight 0
    return rf.merge_dims(y, dims=[heads, value_per_head], out_dim=out_dim)[0]


def _read(param):
    """A param that nn::assign writes, as the step reads it: a copy, so that the
    assignment after the step's code changes neither what the step computed nor
    what backward reads."""
    value = param.copy_template()
    value.raw_tensor = param.raw_tensor.detach().clone()
    return value


def _assign(param, value, *, op):
    """nn::assign at the end of a training step: the param becomes value (op
    "assign") or param + value (op "add"), in place, without a gradient."""
    raw = value.copy_compatible_to_dims_raw(param.dims).detach().to(param.raw_tensor.dtype)
    with torch.no_grad():
        if op == "assign":
            param.raw_tensor.copy_(raw)
        else:
            param.raw_tensor.add_(raw)


def _batch_norm(x, mean, variance, gamma, beta, *, axis, epsilon, momentum, masked=True):
    """RETURNN's TF batch_norm (param_version 2): in training the statistics of
    this batch, and the running ones move towards them (r += (batch - r) *
    momentum, after use); in evaluation the running statistics. (x - mean) /
    sqrt(var + epsilon) * gamma + beta. masked (masked_time): the statistics
    over all frames but padding; else over the padded tensor, the running
    variance from the unbiased batch variance (TF's fused op, torch's
    batch_norm)."""
    if rf.get_run_ctx().train_flag:
        reduce = [d for d in x.dims if d != axis]
        batch_mean, batch_variance = rf.moments(x, axis=reduce, use_mask=masked)
        running_variance = batch_variance
        if not masked:
            n = math.prod(x.raw_tensor.shape) // axis.get_dim_value()
            running_variance = batch_variance * (n / max(n - 1, 1))
        with torch.no_grad():
            mean.assign_add((rf.stop_gradient(batch_mean) - mean) * momentum)
            variance.assign_add((rf.stop_gradient(running_variance) - variance) * momentum)
        use_mean, use_variance = batch_mean, batch_variance
    else:
        use_mean, use_variance = mean, variance
    return (x - use_mean) * rf.rsqrt(use_variance + epsilon) * gamma + beta


def _shift(x, *, axis, amount, pad_value):
    """x shifted along axis by amount frames (right if positive), padded with pad_value; the same shape."""
    if amount > 0:
        return rf.shift_right(x, axis=axis, pad_value=pad_value, amount=amount)
    return rf.shift_left(x, axis=axis, pad_value=pad_value, amount=-amount)


def _pos_encoding(x, *, axis, feature_dim):
    """x plus RETURNN's sinusoidal signal (TF's positional_encoding layer):
    channel c < C/2 is sin(t * s_c), channel C/2 + c is cos(t * s_c), with
    s_c = exp(-c * log(1e4) / (C/2 - 1))."""
    half = feature_dim.dimension // 2
    inv_timescales = numpy.exp(numpy.arange(half, dtype="float64") * -(math.log(1.0e4) / (half - 1)))
    half_dim = Dim(half, name="pos_half")
    scales = rf.convert_to_tensor(inv_timescales.astype("float32"), dims=[half_dim])
    scaled = rf.cast(rf.range_over_dim(axis), "float32") * scales
    signal, _ = rf.concat((rf.sin(scaled), half_dim), (rf.cos(scaled), half_dim), out_dim=feature_dim)
    return x + signal


def _pos_encoding_at(x, t, *, feature_dim):
    """x (a frame) plus the signal _pos_encoding adds at position t."""
    half = feature_dim.dimension // 2
    inv_timescales = numpy.exp(numpy.arange(half, dtype="float64") * -(math.log(1.0e4) / (half - 1)))
    half_dim = Dim(half, name="pos_half")
    scales = rf.convert_to_tensor(inv_timescales.astype("float32"), dims=[half_dim], device=x.device)
    scaled = rf.convert_to_tensor(numpy.float32(t), device=x.device) * scales
    signal, _ = rf.concat((rf.sin(scaled), half_dim), (rf.cos(scaled), half_dim), out_dim=feature_dim)
    return x + signal
