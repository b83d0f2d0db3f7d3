"""Counterparts of returnn_common's tests/test_nn_transformer.py."""

import rc


def test_nn_transformer_search():
    # encoder-decoder, model 10, ff 40, 2 heads, 2 + 2 layers, target 7; beam search (beam 3),
    # as many labels as input frames; the decoder's self-attention caches keys and values
    n = rc.net("transformer-search", search=True)
    v = rc.variables(n)
    assert len([k for k in v if k.startswith("encoder/layers/")]) == 2 * 11
    assert len([k for k in v if k.startswith("decoder/layers/")]) == 2 * 18
    assert v["output_projection/weight/param:0"] == [10, 7] and v["target_embed/weight/param:0"] == [7, 10]
    text = open(rc.config_path("transformer-search", search=True)).read()
    assert '"class": "cum_concat"' in text
    f = rc.feed(n)
    hyps, x = rc.value(n, "hyps", f), rc.value(n, "data:data", f)
    lens, hyp_lens = rc.lengths(n, "data:data", f), rc.lengths(n, "hyps", f)
    assert list(hyp_lens) == list(lens), (lens, hyp_lens)
    assert ((hyps >= 0) & (hyps < 7)).all()
    # the names scope the layers' variables as returnn_common's name_scope checks do
    assert "encoder/layers/0/self_att/qkv/param:0" in v and "decoder/layers/1/cross_att/query/weight/param:0" in v


if __name__ == "__main__":
    rc.main(globals())
