// Reshapes and transposes (see region.h): views of their input (its strides
// rearranged, no step) when its layout allows, else copies.

#include "region.h"

namespace rk {

// Copy `src` (seen with layout `from`) into a new plain tensor `o`, seen by the
// reorder with layout `to` (same bytes as the plain layout of `o`).
void Region::copy_step(int src_phys, const memory::desc& from, int o, const memory::desc& to,
                       const std::string& what) {
  int pdst = define(o, plain(o));
  auto pd = dnnl::reorder::primitive_desc(eng_, from, eng_, to, base_attr());
  add_step(dnnl::reorder(pd), {{DNNL_ARG_FROM, src_phys, from}, {DNNL_ARG_TO, pdst, to}},
           what + " t" + std::to_string(o), &pd);
}

// Strides of `nd` viewing a tensor of dims `od` and strides `os` without a copy, as
// NumPy's reshape does; false when the reshape needs a copy.
bool Region::reshape_strides(const dims& od, const dims& os, const dims& nd, dims& ns) {
  dims d, st;  // the old dims without the 1s
  for (size_t i = 0; i < od.size(); ++i)
    if (od[i] != 1) { d.push_back(od[i]); st.push_back(os[i]); }
  ns.assign(nd.size(), 0);
  size_t oi = 0, oj = 1, ni = 0, nj = 1;
  while (ni < nd.size() && oi < d.size()) {
    long long np = nd[ni], op = d[oi];
    while (np != op) {
      if (np < op) {
        if (nj >= nd.size()) return false;
        np *= nd[nj++];
      } else {
        if (oj >= d.size()) return false;
        op *= d[oj++];
      }
    }
    for (size_t ok = oi; ok + 1 < oj; ++ok)
      if (st[ok] != d[ok + 1] * st[ok + 1]) return false;  // the block is not contiguous
    ns[nj - 1] = st[oj - 1];
    for (size_t nk = nj - 1; nk > ni; --nk) ns[nk - 1] = ns[nk] * nd[nk];
    ni = nj++;
    oi = oj++;
  }
  // Trailing (and any unset) 1-dims: a stride that keeps the layout dense-looking.
  for (size_t i = nd.size(); i-- > 0;)
    if (ns[i] == 0) ns[i] = i + 1 < nd.size() ? ns[i + 1] * nd[i + 1] : 1;
  return true;
}

dims Region::plain_strides(const dims& d) {
  dims st(d.size());
  long long s = 1;
  for (size_t i = d.size(); i-- > 0;) { st[i] = s; s *= d[i]; }
  return st;
}

// Logical tensor `o` is `src` (physical tensor `ps`) seen through the layout `md`:
// the same buffer, no step.
void Region::define_view(int o, int src, int ps, const memory::desc& md) {
  if (!versions_[o].empty()) throw Error("program: tensor " + std::to_string(o) + " written twice");
  Phys v = phys_[ps];
  v.md = md;
  v.first = v.last = -1;
  v.offset = 0;
  v.alias = v.kind == Kind::Internal ? ps : -1;
  phys_.push_back(v);
  versions_[o].push_back(static_cast<int>(phys_.size()) - 1);
  join_group(src, o);
}

void Region::lower_reshape(const Json& node) {
  int src = in(node, 0), o = out(node);
  memory::desc pmd = plain(src);
  if (!views_allowed(src, o)) {
    int ps = version(src, pmd);
    copy_step(ps, pmd, o, pmd, "reshape");
    return;
  }
  const memory::desc& have = md_of(src);
  dims ns;
  if (is_strided(have) && reshape_strides(dims_[src], have.get_strides(), dims_[o], ns)) {
    define_view(o, src, primary(src), memory::desc(dims_[o], dtypes_[o], ns));
    return;
  }
  define_view(o, src, version(src, pmd), plain(o));
}

void Region::lower_transpose(const Json& node) {
  int src = in(node, 0), o = out(node);
  auto perm = node.at("perm").ints();
  const dims& sd = dims_[src];
  if (perm.size() != sd.size()) throw Error("program: transpose permutation has the wrong rank");
  const memory::desc& have = md_of(src);
  bool strided = is_strided(have);
  int ps = strided ? primary(src) : version(src, plain(src));
  dims st = strided ? have.get_strides() : plain_strides(sd);
  dims vd(sd.size()), vs(sd.size());
  for (size_t i = 0; i < perm.size(); ++i) {
    vd[i] = sd[checked_axis(perm[i], sd.size())];
    vs[i] = st[perm[i]];
  }
  memory::desc view(vd, dtypes_[src], vs);
  if (views_allowed(src, o)) {
    define_view(o, src, ps, view);
    return;
  }
  copy_step(ps, view, o, plain(o), "transpose");
}

size_t Region::checked_axis(long long a, size_t ndims) {
  if (a < 0 || a >= static_cast<long long>(ndims)) throw Error("program: axis out of range");
  return static_cast<size_t>(a);
}

}  // namespace rk
