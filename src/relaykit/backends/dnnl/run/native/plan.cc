// Memory (see region.h): intermediate tensors share buffers by liveness, in one arena
// per context with the scratchpad; the constants are reordered once into their own.

#include "region.h"

#include <sys/mman.h>

namespace rk {

// A buffer for weights or activations: 2 MiB-aligned and backed by huge pages when big
// (fewer TLB misses streaming VGG's 400 MB of dense weights), else page-aligned.
void* alloc_buffer(size_t bytes) {
  const size_t huge = size_t(2) << 20;
  size_t align = bytes >= huge ? huge : 4096;
  size_t size = (bytes + align - 1) / align * align;
  void* p = std::aligned_alloc(align, size ? size : align);
  if (!p) throw Error("out of memory allocating " + std::to_string(bytes) + " bytes");
  if (align == huge) madvise(p, size, MADV_HUGEPAGE);
  return p;
}

void Region::plan() {
  size_t n = phys_.size();
  std::vector<int> first(n, -1), last(n, -1);
  std::vector<size_t> size(n, 0);
  for (size_t p = 0; p < n; ++p) {
    if (phys_[p].kind != Kind::Internal) continue;
    int r = root(static_cast<int>(p));
    size_t offset = 0;
    for (int q = static_cast<int>(p); phys_[q].alias >= 0; q = phys_[q].alias) offset += phys_[q].offset;
    size[r] = std::max(size[r], offset + phys_[p].md.get_size());
    int f = phys_[p].first, l = std::max(phys_[p].last, phys_[p].first);
    if (f >= 0) first[r] = first[r] < 0 ? f : std::min(first[r], f);
    last[r] = std::max(last[r], l);
  }
  // Walk the steps; a buffer is free again after the last step that uses its tensors.
  std::vector<std::vector<int>> starts(steps_.size()), ends(steps_.size());
  for (size_t r = 0; r < n; ++r)
    if (size[r] > 0 && first[r] >= 0) {
      starts[first[r]].push_back(static_cast<int>(r));
      ends[std::max(last[r], first[r])].push_back(static_cast<int>(r));
    }
  std::vector<size_t> buf_size;
  std::vector<int> free_bufs, buf_of(n, -1);
  for (size_t s = 0; s < steps_.size(); ++s) {
    for (int r : starts[s]) {
      // Best fit among free buffers, else grow the largest free one, else a new one.
      int best = -1;
      for (int b : free_bufs)
        if (buf_size[b] >= size[r] && (best < 0 || buf_size[b] < buf_size[best])) best = b;
      if (best < 0)
        for (int b : free_bufs)
          if (best < 0 || buf_size[b] > buf_size[best]) best = b;
      if (best < 0) {
        best = static_cast<int>(buf_size.size());
        buf_size.push_back(0);
      } else {
        free_bufs.erase(std::find(free_bufs.begin(), free_bufs.end(), best));
      }
      buf_size[best] = std::max(buf_size[best], size[r]);
      buf_of[r] = best;
    }
    for (int r : ends[s]) free_bufs.push_back(buf_of[r]);
  }
  // One arena (huge pages when big) holds the buffers, then the scratchpad.
  auto round = [](size_t b) { return (b + 4095) / 4096 * 4096; };
  std::vector<size_t> buf_offset(buf_size.size());
  size_t total = 0;
  for (size_t b = 0; b < buf_size.size(); ++b) {
    buf_offset[b] = total;
    total += round(buf_size[b]);
  }
  scratch_offset_ = total;
  total += round(scratch_bytes_);
  arena_bytes_ = static_cast<long long>(total);
  for (size_t p = 0; p < n; ++p)
    if (phys_[p].kind == Kind::Internal) {
      int b = buf_of[root(static_cast<int>(p))];
      size_t offset = 0;
      for (int q = static_cast<int>(p); phys_[q].alias >= 0; q = phys_[q].alias) offset += phys_[q].offset;
      if (b >= 0) phys_[p].arena_offset = buf_offset[b] + offset;
    }
  reorder_constants();
}

// Reorder every constant into the layout its primitive wants, all into one arena.
void Region::reorder_constants() {
  size_t total = 0;
  std::vector<size_t> offsets;
  for (const auto& c : const_reorders_) {
    offsets.push_back(total);
    total += (phys_[c.phys].md.get_size() + 63) / 64 * 64;
  }
  if (total == 0) return;
  weights_ = alloc_buffer(total);
  weight_bytes_ = static_cast<long long>(total);
  for (size_t i = 0; i < const_reorders_.size(); ++i) {
    const auto& c = const_reorders_[i];
    Phys& p = phys_[c.phys];
    p.ptr = static_cast<char*>(weights_) + offsets[i];
    memory from(c.from_md, eng_, c.from_ptr);
    memory to(p.md, eng_, p.ptr);
    dnnl::reorder(from, to).execute(strm_, from, to);
  }
  strm_.wait();
  const_reorders_.clear();
}

}  // namespace rk
