"""The IR: immutable nodes, the printer, and verify() catching every kind of broken graph."""

import dataclasses

import numpy as np
import pytest

import pypto as ppto
from pypto.builder import literal
from pypto.ir import Eqn, Graph, Var, freeze_attrs
from pypto.types import TensorType


def seed_graph():
    x, y = ppto.tensor("x"), ppto.tensor("y")
    chain = ppto.sin(ppto.reduce_sum(x, axis=1)) * ppto.exp(ppto.transpose(y, (1, 0)))
    return ppto.trace(chain, x=np.ones((3, 4), np.float32), y=np.ones((3, 5), np.float32))


def test_printer_golden():
    assert str(seed_graph()) == (
        "{ lambda x:f32[x.0,x.1] y:f32[y.0,y.1] .\n"
        "  let a:f32[x.0] = sum[axis=(1,)] x\n"
        "      b:f32[x.0] = sin a\n"
        "      c:f32[y.1,y.0] = transpose[perm=(1, 0)] y\n"
        "      d:f32[y.1,y.0] = exp c\n"
        "      e:f32[y.1,x.0] = multiply b d\n"
        "  in (e) }\n"
        "  where x.0 == y.0"
    )


def test_printer_shows_literals_constants_and_weak_inputs():
    x, s = ppto.tensor("x"), ppto.tensor("s")
    chain = (x * s + np.float32(2)) - np.arange(3.0)
    text = str(ppto.trace(chain, x=np.ones(3, np.float32), s=0.5))
    assert "s:~f64[]" in text  # a Python float input is weak
    assert "consts a:f64[3]" in text
    assert "2.0:f32[]" in text  # a NumPy scalar literal is strong
    assert "x:f32[3]" not in text and "x:f32[x.0]" in text


def test_printer_names_beyond_z():
    x = ppto.tensor("x")
    chain = x
    for _ in range(30):
        chain = chain + 1
    text = str(ppto.trace(chain, x=np.ones(2)))
    assert " z:" in text and " ba:" in text and " be:" in text


def test_nodes_are_immutable():
    g = seed_graph()
    with pytest.raises(dataclasses.FrozenInstanceError):
        g.eqns[0].op = "prod"
    with pytest.raises(dataclasses.FrozenInstanceError):
        g.inputs[0].name = "z"
    with pytest.raises(TypeError):
        freeze_attrs({"axis": [0, 1]})  # attributes must be hashable


def replace_eqn(g, i, **changes):
    eqns = list(g.eqns)
    eqns[i] = dataclasses.replace(eqns[i], **changes)
    return dataclasses.replace(g, eqns=tuple(eqns))


def test_verify_accepts_traced_graphs():
    g = seed_graph()
    assert ppto.verify(g) is g


def test_verify_rejects_a_wrong_recorded_type():
    g = seed_graph()
    bad = replace_eqn(g, 1, out=Var(TensorType(np.dtype("f8"), g.eqns[1].out.type.shape)))
    # eqn 1's output is read by eqn 4, which now reads an undefined value too; either is caught
    with pytest.raises(ppto.InternalError, match="recorded f64"):
        ppto.verify(bad)


def test_verify_rejects_wrong_shapes():
    g = seed_graph()
    out = g.eqns[0].out
    wrong = Var(TensorType(out.type.dtype, (7,)))
    bad = dataclasses.replace(g, eqns=(dataclasses.replace(g.eqns[0], out=wrong),))
    bad = dataclasses.replace(bad, outputs=(wrong,))
    with pytest.raises(ppto.InternalError, match=r"rules derive f32\[x.0\]"):
        ppto.verify(bad)


def test_verify_rejects_use_before_definition_and_double_definition():
    g = seed_graph()
    swapped = dataclasses.replace(g, eqns=(g.eqns[1], g.eqns[0], *g.eqns[2:]))
    with pytest.raises(ppto.InternalError, match="used before it is defined"):
        ppto.verify(swapped)
    twice = dataclasses.replace(g, eqns=(*g.eqns, g.eqns[-1]))
    with pytest.raises(ppto.InternalError, match="defined twice"):
        ppto.verify(twice)


def test_verify_rejects_unknown_and_composite_ops_and_raw_attrs():
    g = seed_graph()
    with pytest.raises(ppto.InternalError, match="unknown op"):
        ppto.verify(replace_eqn(g, 1, op="no_such_op"))
    with pytest.raises(ppto.InternalError, match="must be expanded"):
        ppto.verify(replace_eqn(g, 1, op="softmax"))
    with pytest.raises(ppto.InternalError, match="not normalized"):
        ppto.verify(replace_eqn(g, 0, attrs=freeze_attrs({"axis": -1, "keepdims": False})))


def test_verify_rejects_unrecorded_size_assumptions():
    g = seed_graph()
    with pytest.raises(ppto.InternalError, match="not recorded as guards: x.0 == y.0"):
        ppto.verify(dataclasses.replace(g, guards=()))


def test_verify_rejects_an_undefined_output_and_a_bad_literal():
    g = seed_graph()
    with pytest.raises(ppto.InternalError, match="output"):
        ppto.verify(dataclasses.replace(g, outputs=(Var(g.outputs[0].type),)))
    x = g.inputs[0]
    lit = dataclasses.replace(literal(np.float32(2)), value=2.0)
    out = Var(TensorType(np.dtype("f4"), x.type.shape))
    eqn = Eqn("multiply", (x, lit), (), out)
    bad = Graph((x,), (), (eqn,), (out,), ())
    with pytest.raises(ppto.InternalError, match="strong literal"):
        ppto.verify(bad)


def test_every_traced_graph_is_verified(monkeypatch):
    """run() verifies each graph it traces: a rule that lies is caught before execution."""
    import pypto.tracer as trace_mod

    calls = []
    original = trace_mod.verify
    monkeypatch.setattr(trace_mod, "verify", lambda g: calls.append(g) or original(g))
    x = ppto.tensor("x")
    (ppto.sin(x) + 1).run(x=np.ones(3))
    assert len(calls) == 1 and calls[0].eqns[0].op == "sin"
