"""Relay's standard-library files that are written in the text format.

``IRModule.import_from_std("nat.rly")`` parses the file with the module's own
definitions in scope and adds what it defines. ``nat.rly`` defines Peano naturals
(``type nat { zero, succ(nat) }``) and functions over them; it uses the Prelude's
``List``, ``hd`` and ``tl``, so it is imported after the Prelude. ``gradient.rly``
defines the ``GradCell`` type used by higher-order gradients.

>>> import relaykit as tvm
>>> from relaykit.relay.prelude import Prelude
>>> mod = tvm.IRModule()
>>> _ = Prelude(mod)
>>> mod.import_from_std("nat.rly")
>>> [c.name_hint for c in mod.get_type("nat")[1:]]
['zero', 'succ']
"""

from __future__ import annotations

from relaykit.ir.hooks import register_std_file
from relaykit.ir.module import IRModule

from .parser import parse

__all__ = ["NAT", "GRADIENT", "load_std_text"]

NAT = """
#[version = "0.0.5"]
type nat {
  zero,
  succ(nat),
}

/* 2 * n */
def @nat_double(%n: nat) -> nat {
  match (%n) {
    zero => zero,
    succ(%m) => succ(succ(@nat_double(%m))),
  }
}

/* a + b, by peeling a */
def @nat_add(%a: nat, %b: nat) -> nat {
  match (%a) {
    zero => %b,
    succ(%m) => succ(@nat_add(%m, %b)),
  }
}

/* the element of a list at a nat index */
def @nat_nth[T](%xs: List[T], %i: nat) -> T {
  match (%i) {
    zero => @hd(%xs),
    succ(%j) => @nat_nth(@tl(%xs), %j),
  }
}

/* the list with the element at a nat index replaced */
def @nat_update[T](%xs: List[T], %i: nat, %v: T) -> List[T] {
  match (%i) {
    zero => Cons(%v, @tl(%xs)),
    succ(%j) => Cons(@hd(%xs), @nat_update(@tl(%xs), %j, %v)),
  }
}

/* the function applying f n times */
def @nat_iterate[T](%f: fn (T) -> T, %n: nat) -> fn (T) -> T {
  match (%n) {
    zero => fn (%x: T) -> T { %x },
    succ(%m) => fn (%x: T) -> T { %f(@nat_iterate(%f, %m)(%x)) },
  }
}
"""

GRADIENT = """
#[version = "0.0.5"]
/* the gradient of a value of type T: a value, or a thunk of ones or of zeros */
type GradCell[T] {
  Raw(T),
  One(fn () -> T),
  Zero(fn () -> T),
}

/* the sum of two gradient cells (a zero cell adds nothing) */
def @AddGradCell[T](%add: fn (T, T) -> T, %l: GradCell[T], %r: GradCell[T]) -> GradCell[T] {
  match ((%l, %r)) {
    (Zero(_), _) => %r,
    (_, Zero(_)) => %l,
    _ => Raw(%add(@FromGradCell(%l), @FromGradCell(%r))),
  }
}

/* the value of a gradient cell */
def @FromGradCell[T](%g: GradCell[T]) -> T {
  match (%g) {
    Raw(%x) => %x,
    One(%f) => %f(),
    Zero(%f) => %f(),
  }
}
"""


def load_std_text(mod: IRModule, text: str, name: str, defines: str) -> None:
    """Parse ``text`` with ``mod``'s definitions in scope and add what it defines to
    ``mod`` (nothing if ``mod`` already has the type ``defines``)."""
    if any(g.name_hint == defines for g in mod.get_global_type_vars()):
        return
    out = parse(text, name, init_module=mod)
    for gtv, data in out.type_definitions.items():
        if gtv not in mod.type_definitions:
            mod[gtv] = data
    for gv, fn in out.items():
        if gv.name_hint not in {g.name_hint for g in mod.get_global_vars()}:
            mod._add(gv, fn)
            mod._set_checked(gv.name_hint, fn)


register_std_file("nat.rly", lambda mod: load_std_text(mod, NAT, "nat.rly", "nat"))
register_std_file(
    "gradient.rly", lambda mod: load_std_text(mod, GRADIENT, "gradient.rly", "GradCell")
)
