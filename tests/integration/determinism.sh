#!/usr/bin/env bash
# Compilation is deterministic, and emitted configs are plain Python data that
# no name can break out of.
source "$(dirname "$0")/lib.sh"

"$RETC" compile 12ax -o "$TMP/a.config"
(cd "$TMP" && LC_ALL=C "$RETC" compile 12ax -o b.config)
LANG=de_DE.UTF-8 LC_ALL=C.UTF-8 TZ=Asia/Tokyo "$RETC" compile 12ax -o "$TMP/c.config"
cmp "$TMP/a.config" "$TMP/b.config" || fail "compiling twice differs"
cmp "$TMP/a.config" "$TMP/c.config" || fail "compiling under another locale differs"
cmp "$TMP/a.config" "$RETC_SOURCE_DIR/tests/golden/12ax.config" || fail "differs from the golden config"
pass "identical bytes across runs, directories and locales"

# Every model that compiles, bundled and test ones.
mkdir "$TMP/all"
for m in $("$RETC" list | cut -d' ' -f1); do "$RETC" compile "$m" -o "$TMP/all/$m.config"; done
for m in $("$RETC_TEST_MODELS" list | cut -d' ' -f1 | grep -v '^bad'); do
  "$RETC_TEST_MODELS" compile "$m" -o "$TMP/all/$m.config" 2>/dev/null || true
done
cp "$TMP/all/hostile-names.config" "$TMP/hostile.config"
grep -q 'hidden_dim.copy(match_priority=1)' "$TMP/all/square.config" || fail "square weight without match_priority"
[ "$(ls "$TMP/all" | wc -l)" -ge 20 ] || fail "expected at least 20 compiled configs, got $(ls "$TMP/all" | wc -l)"
"$VENV/bin/python" - "$RETC_SOURCE_DIR/emit/tf/net_dict.cc" "$TMP/hostile.config" "$TMP"/all/*.config <<'PY'
import ast, re, sys
allowed_calls = {"FeatureDim", "SpatialDim"}
# And models with scatter nodes, param assignments, norms (weight norm), linears or
# normalizations (layer norm): retc's fixed _retc_scatter(_type), _retc_assign(_type),
# _retc_norm(_type), _retc_linear(_type), _retc_dot(_t), _retc_plain_linear,
# _retc_weight_norm_ops, _retc_scaled_linear and _retc_normalize, as
# emit/tf/net_dict.cc writes them (kScatterDefinitions, kAssignDefinitions, kNormDefinitions,
# kLinearDefinitions, kScaledLinearDefinitions, kNormalizeDefinitions: no part of them comes
# from the model).
FIXED = {}
net_dict_src = open(sys.argv.pop(1)).read()
for block in ("kScatterDefinitions", "kAssignDefinitions", "kNormDefinitions", "kLinearDefinitions",
              "kScaledLinearDefinitions", "kNormalizeDefinitions"):
    fixed_src = re.search(block + r'\[\] = R"PY\((.*?)\)PY"', net_dict_src, re.S).group(1)
    FIXED.update({f.name: ast.get_source_segment(fixed_src, f) for f in ast.parse(fixed_src).body})
assert set(FIXED) == {"_retc_scatter", "_retc_scatter_type", "_retc_assign", "_retc_assign_type", "_retc_norm",
                      "_retc_norm_type", "_retc_linear", "_retc_linear_type", "_retc_dot", "_retc_dot_t",
                      "_retc_plain_linear", "_retc_weight_norm_ops", "_retc_scaled_linear", "_retc_normalize"}, FIXED.keys()
fixed_seen = 0
# The one piece of code a TF config may hold: a model with pretraining stages
# gets retc's fixed _stage_of and a get_network that indexes the stage nets.
STAGE_OF = '''def _stage_of(epoch):
    """The pretraining stage that trains `epoch` (0: the first); the log says when it changes."""
    stage = sum(epoch >= first for first in _stage_epochs)
    if _stage_shown != [stage]:
        _stage_shown[:] = [stage]
        print("retc: epoch %d: pretraining stage %d of %d" % (epoch, stage + 1, len(_stage_epochs) + 1), flush=True)
    return stage'''
staged = 0
for path in sys.argv[1:]:
    src = open(path, encoding="ascii").read()  # ASCII only: non-ASCII is escaped
    tree = ast.parse(src)
    for stmt in tree.body:
        if isinstance(stmt, ast.ImportFrom):
            assert stmt.module.startswith("returnn"), (path, ast.dump(stmt))
            continue
        if isinstance(stmt, ast.FunctionDef) and stmt.name == "_stage_of":
            assert ast.get_source_segment(src, stmt) == STAGE_OF, (path, ast.get_source_segment(src, stmt))
            staged += 1
            continue
        if isinstance(stmt, ast.FunctionDef) and stmt.name in FIXED:
            assert ast.get_source_segment(src, stmt) == FIXED[stmt.name], (path, stmt.name)
            fixed_seen += 1
            continue
        if isinstance(stmt, ast.FunctionDef) and stmt.name == "get_network":
            ret = stmt.body[-1]
            assert len(stmt.body) == 2 and isinstance(stmt.body[0].value, ast.Constant), (path, ast.dump(stmt))
            assert isinstance(ret, ast.Return) and isinstance(ret.value, ast.Subscript), (path, ast.dump(stmt))
            nets = ret.value.value
            assert isinstance(nets, ast.List) and all(
                isinstance(n, ast.Name) and (n.id == "network" or n.id.startswith("network_stage"))
                for n in nets.elts), (path, ast.dump(nets))
            assert ast.dump(ret.value.slice) == ast.dump(ast.parse("_stage_of(epoch)", mode="eval").body), path
            continue
        assert isinstance(stmt, ast.Assign), (path, ast.dump(stmt))
        assert len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name), path
        for node in ast.walk(stmt.value):
            if isinstance(node, ast.Call):
                f = node.func
                ok = (isinstance(f, ast.Name) and f.id in allowed_calls) or (
                    isinstance(f, ast.Attribute) and f.attr == "copy" and isinstance(f.value, ast.Name))
                assert ok, (path, ast.dump(node))
                for a in node.args:
                    assert isinstance(a, ast.Constant), (path, ast.dump(a))
            else:
                assert isinstance(node, (ast.Constant, ast.Dict, ast.List, ast.Tuple, ast.Set, ast.Name, ast.Load,
                                         ast.BinOp, ast.Mult, ast.Add, ast.FloorDiv, ast.UnaryOp, ast.USub,
                                         ast.keyword, ast.Attribute)), (path, ast.dump(node))
    if "hostile" in path:
        names = {}
        for stmt in tree.body:
            if isinstance(stmt, ast.Assign) and isinstance(stmt.value, ast.Call):
                names[stmt.targets[0].id] = stmt.value.args[0].value
        assert "ti\"me\\\n'); import os #" in names.values(), names
        assert "h\u00e9idd\u00ebn \u2603 \ufffd" in names.values(), names
        train = next(s.value for s in tree.body if isinstance(s, ast.Assign) and s.targets[0].id == "train")
        d = ast.literal_eval(train)
        assert d["comment\"'\\\n"] == "x\"; import os; os.system('true') #", d
assert staged >= 1, "no config with pretraining stages was checked"
assert fixed_seen >= 6, "no configs with scatter's, assign's and norm's definitions were checked"
print("%d configs are plain data (%d with retc's fixed stage selection, %d of retc's fixed scatter/assign/norm "
      "functions)" % (len(sys.argv) - 2, staged, fixed_seen))
PY
pass "emitted configs hold only imports from returnn, assignments, Dim constructions and literals (and a staged model's fixed get_network, scatter's and assign's fixed functions)"
