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

__all__ = ["NAT", "GRADIENT", "PRELUDE_LISTS", "load_std_text"]

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


PRELUDE_LISTS = """
#[version = "0.0.5"]
/* f with its two arguments swapped */
def @flip[A, B, C](%f: fn (A, B) -> C) -> fn (B, A) -> C {
  fn (%b: B, %a: A) -> C { %f(%a, %b) }
}

/* the right fold of a non-empty list, its last element the start */
def @foldr1[A](%f: fn (A, A) -> A, %xs: List[A]) -> A {
  match (%xs) {
    Cons(%x, Nil) => %x,
    Cons(%x, %rest) => %f(%x, @foldr1(%f, %rest)),
  }
}

/* pairs of the elements of two lists, as long as the shorter one */
def @zip[A, B](%xs: List[A], %ys: List[B]) -> List[(A, B)] {
  match ((%xs, %ys)) {
    (Cons(%x, %xr), Cons(%y, %yr)) => Cons((%x, %y), @zip(%xr, %yr)),
    _ => Nil,
  }
}

/* map with an accumulator threaded from the right; outputs in input order */
def @map_accumr[A, B, C](%f: fn (A, B) -> (A, C), %init: A, %xs: List[B]) -> (A, List[C]) {
  match (%xs) {
    Nil => (%init, Nil),
    Cons(%x, %rest) => {
      let %r = @map_accumr(%f, %init, %rest);
      let %s = %f(%r.0, %x);
      (%s.0, Cons(%s.1, %r.1))
    },
  }
}

/* map with an accumulator threaded from the left; outputs consed, so last first */
def @map_accuml[A, B, C](%f: fn (A, B) -> (A, C), %init: A, %xs: List[B]) -> (A, List[C]) {
  @foldl(fn (%acc: (A, List[C]), %x: B) -> (A, List[C]) {
    let %s = %f(%acc.0, %x);
    (%s.0, Cons(%s.1, %acc.1))
  }, (%init, Nil), %xs)
}

/* the list produced by f from a seed until f gives None, first output first */
def @unfoldr[A, B](%f: fn (A) -> Option[(A, B)], %seed: A) -> List[B] {
  match (%f(%seed)) {
    Some(%p) => Cons(%p.1, @unfoldr(%f, %p.0)),
    None => Nil,
  }
}

/* the list produced by f from a seed until f gives None, last output first */
def @unfoldl[A, B](%f: fn (A) -> Option[(A, B)], %seed: A) -> List[B] {
  @rev(@unfoldr(%f, %seed))
}

/* f applied to every member of a rose tree */
def @tmap[A, B](%f: fn (A) -> B, %t: Tree[A]) -> Tree[B] {
  match (%t) {
    Rose(%v, %children) =>
      Rose(%f(%v), @map(fn (%c: Tree[A]) -> Tree[B] { @tmap(%f, %c) }, %children)),
  }
}

/* the number of members of a rose tree */
def @size[A](%t: Tree[A]) -> int32 {
  match (%t) {
    Rose(_, %children) => add(1, @sum(@map(fn (%c: Tree[A]) -> int32 { @size(%c) }, %children))),
  }
}

/* the function applying f n times (n >= 0) */
def @iterate[A](%f: fn (A) -> A, %n: int32) -> fn (A) -> A {
  if (equal(%n, 0)) {
    @id
  } else {
    @compose(%f, @iterate(%f, subtract(%n, 1)))
  }
}
"""


def load_std_text(mod: IRModule, text: str, name: str, defines: str) -> None:
    """Parse ``text`` with ``mod``'s definitions in scope and add what it defines to
    ``mod`` (nothing if ``mod`` already has a type or a global function ``defines``)."""
    if any(g.name_hint == defines for g in mod.get_global_type_vars()):
        return
    if any(g.name_hint == defines for g in mod.get_global_vars()):
        return
    out = parse(text, name, init_module=mod)
    for gtv, data in out.type_definitions.items():
        if gtv not in mod.type_definitions:
            mod[gtv] = data
    for gv, fn in out.items():
        if gv.name_hint not in {g.name_hint for g in mod.get_global_vars()}:
            mod._add(gv, fn)
            mod._set_checked(gv.name_hint, fn)


#: ``core.rly``: the ``Storage`` type of the memory dialect (``memory.alloc_storage``).
CORE = """#[version = "0.0.5"]
extern type Storage
"""

register_std_file("core.rly", lambda mod: load_std_text(mod, CORE, "core.rly", "Storage"))
register_std_file("nat.rly", lambda mod: load_std_text(mod, NAT, "nat.rly", "nat"))
register_std_file(
    "gradient.rly", lambda mod: load_std_text(mod, GRADIENT, "gradient.rly", "GradCell")
)
