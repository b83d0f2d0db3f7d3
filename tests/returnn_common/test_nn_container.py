"""Counterparts of returnn_common's tests/test_nn_container.py."""

import rc


def _chain(model, prefixes, dims):
    n = rc.net(model)
    want = {}
    for p, i, o in zip(prefixes, [13] + dims[:-1], dims):
        want |= rc.lin(p, i, o)
    rc.check_vars(n, want)
    f = rc.feed(n)
    h, params = rc.value(n, "data:data", f), n.params()
    for p in prefixes:
        h = h @ params[p + "weight/param:0"] + params[p + "bias/param:0"]
    rc.close(rc.value(n, "output", f), h, 1e-4, "applied in order")


def test_module_list():
    _chain("container-module-list", ["ls/%d/" % i for i in range(4)], [3, 4, 5, 6])


def test_sequential_base_case():
    _chain("container-sequential", ["seq/%d/" % i for i in range(3)], [1, 2, 3])


def test_sequential_named_case():
    _chain("container-sequential-named", ["seq/one/", "seq/two/", "seq/three/"], [1, 2, 3])


def test_parameter_list():
    n = rc.net("container-parameter-list")
    rc.check_vars(n, {"param_list/%d/param:0" % i: [13] for i in range(3)})
    f = rc.feed(n)
    p = n.params()
    want = rc.value(n, "data:data", f) + sum(p["param_list/%d/param:0" % i] for i in range(3))
    rc.close(rc.value(n, "output", f), want, 1e-5, "x + the three params")


if __name__ == "__main__":
    rc.main(globals())
