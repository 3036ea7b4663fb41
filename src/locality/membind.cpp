#include "hympi/locality/membind.hpp"

#include <omp.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <new>
#include <utility>

#include "hympi/core/error.hpp"

namespace hympi::locality {

std::size_t page_bytes() noexcept {
  const long size = sysconf(_SC_PAGESIZE);
  return size > 0 ? static_cast<std::size_t>(size) : 4096;
}

namespace {

void require_this_system(const Topology& topology, const char* what) {
  if (!topology.is_this_system())
    throw TopologyError(std::string("cannot ") + what + " on a topology that is not this machine");
}

/// [first page, end of last page) around `area`: the kernel binds and reports whole pages.
std::pair<std::uintptr_t, std::uintptr_t> page_span(const void* data, std::size_t bytes) {
  const std::uintptr_t page = page_bytes();
  const auto begin = reinterpret_cast<std::uintptr_t>(data);
  return {begin / page * page, (begin + bytes + page - 1) / page * page};
}

hwloc_membind_policy_t hwloc_policy(MemoryPolicy policy) {
  return policy == MemoryPolicy::interleave ? HWLOC_MEMBIND_INTERLEAVE : HWLOC_MEMBIND_BIND;
}

[[noreturn]] void refused(MemoryPolicy policy, const Bitmap& nodes, int err) {
  throw InvalidArgument("memory policy " + hympi::to_string(policy) + " on NUMA nodes " + nodes.to_list() +
                        " refused by the kernel: " + std::strerror(err));
}

}  // namespace

Bitmap policy_nodeset(const Topology& topology, MemoryPolicy policy, const Location* where) {
  switch (policy) {
    case MemoryPolicy::none: return Bitmap();
    case MemoryPolicy::interleave: return topology.machine_nodeset();
    case MemoryPolicy::location:
      if (where == nullptr) throw InvalidArgument("memory policy location needs a location to bind to");
      return where->nodeset;
    case MemoryPolicy::local: {
      require_this_system(topology, "find the calling thread's NUMA node");
      Bitmap last;
      if (hwloc_get_last_cpu_location(topology.get(), last.get(), HWLOC_CPUBIND_THREAD) < 0)
        throw TopologyError(std::string("cannot tell where the calling thread runs: ") + std::strerror(errno));
      return topology.nodeset_of(last);
    }
  }
  throw InvalidArgument("unknown memory policy");
}

void bind_memory(const Topology& topology, std::span<std::byte> area, MemoryPolicy policy, const Location* where) {
  if (policy == MemoryPolicy::none) return;
  const Bitmap nodes = policy_nodeset(topology, policy, where);
  require_this_system(topology, "bind memory");
  if (area.empty()) return;
  if (nodes.weight() <= 0) refused(policy, nodes, EINVAL);  // an empty set would mean "anywhere" to some kernels
  const auto [begin, end] = page_span(area.data(), area.size());
  if (hwloc_set_area_membind(topology.get(), reinterpret_cast<const void*>(begin), end - begin, nodes.get(),
                             hwloc_policy(policy), HWLOC_MEMBIND_BYNODESET) < 0)
    refused(policy, nodes, errno);
}

void set_memory_policy(const Topology& topology, MemoryPolicy policy, const Location* where) {
  if (policy == MemoryPolicy::none) return;
  require_this_system(topology, "set a memory policy");
  ParallelErrors errors;
#pragma omp parallel
  errors.capture([&] {
    const Bitmap nodes = policy_nodeset(topology, policy, where);
    if (nodes.weight() <= 0) refused(policy, nodes, EINVAL);
    if (hwloc_set_membind(topology.get(), nodes.get(), hwloc_policy(policy),
                          HWLOC_MEMBIND_THREAD | HWLOC_MEMBIND_BYNODESET) < 0)
      refused(policy, nodes, errno);
  });
  errors.rethrow();
}

double PagePlacement::share_on_intended() const noexcept {
  return pages == 0 || !has_intent ? 0.0 : static_cast<double>(on_intended) / static_cast<double>(pages);
}

nlohmann::json PagePlacement::to_json() const {
  nlohmann::json nodes = nlohmann::json::object();
  for (const auto& [node, count] : per_node) nodes[std::to_string(node)] = count;
  nlohmann::json out = {{"page_bytes", page_bytes}, {"pages", pages}, {"absent", absent}, {"per_node", nodes}};
  if (has_intent) {
    out["on_intended"] = on_intended;
    out["share_on_intended"] = share_on_intended();
  }
  return out;
}

void PagePlacement::merge(const PagePlacement& other) {
  if (other.pages == 0) {
    if (page_bytes == 0) page_bytes = other.page_bytes;
    return;
  }
  if (pages > 0 && page_bytes != other.page_bytes)
    throw InvalidArgument("cannot sum page placements of " + std::to_string(page_bytes) + " B and " +
                          std::to_string(other.page_bytes) + " B pages");
  has_intent = pages == 0 ? other.has_intent : has_intent && other.has_intent;
  page_bytes = other.page_bytes;
  pages += other.pages;
  absent += other.absent;
  on_intended += other.on_intended;
  for (const auto& [node, count] : other.per_node) per_node[node] += count;
}

std::string PagePlacement::to_string() const {
  std::string out = std::to_string(pages) + " pages of " + std::to_string(page_bytes) + " B:";
  for (const auto& [node, count] : per_node) out += " node " + std::to_string(node) + " " + std::to_string(count);
  if (absent > 0) out += " absent " + std::to_string(absent);
  if (has_intent) {
    char share[32];
    std::snprintf(share, sizeof share, "%.1f", 100.0 * share_on_intended());
    out += std::string(" (") + share + " % where intended)";
  }
  return out;
}

namespace {

PagePlacement query_pages(const Topology& topology, std::span<const std::byte> area,
                          const std::function<const Bitmap*(std::size_t)>& intent, bool has_intent) {
  require_this_system(topology, "ask where pages are");
  PagePlacement out;
  out.page_bytes = page_bytes();
  out.has_intent = has_intent;
  if (area.empty()) return out;
  const auto [begin, end] = page_span(area.data(), area.size());
  out.pages = (end - begin) / out.page_bytes;
  Bitmap where;
  // One page per query: hwloc reports the union of the nodes of all pages it is asked about,
  // and a summary needs the count per node.
  for (std::size_t p = 0; p < out.pages; ++p) {
    const auto* page = reinterpret_cast<const void*>(begin + p * out.page_bytes);
    if (hwloc_get_area_memlocation(topology.get(), page, out.page_bytes, where.get(), HWLOC_MEMBIND_BYNODESET) < 0)
      throw TopologyError(std::string("the kernel does not say where pages are (hwloc_get_area_memlocation): ") +
                          std::strerror(errno));
    const int node = hwloc_bitmap_first(where.get());
    if (node < 0) {
      ++out.absent;
      continue;
    }
    ++out.per_node[node];
    const Bitmap* meant = has_intent ? intent(p) : nullptr;
    if (meant != nullptr && meant->contains(static_cast<unsigned>(node))) ++out.on_intended;
  }
  return out;
}

}  // namespace

PagePlacement page_placement(const Topology& topology, std::span<const std::byte> area, const Bitmap* intended) {
  return query_pages(topology, area, [intended](std::size_t) { return intended; }, intended != nullptr);
}

PagePlacement page_placement(const Topology& topology, std::span<const std::byte> area,
                             std::span<const Bitmap* const> intended) {
  const auto [begin, end] = area.empty() ? std::pair<std::uintptr_t, std::uintptr_t>{0, 0}
                                         : page_span(area.data(), area.size());
  const std::size_t pages = (end - begin) / page_bytes();
  if (intended.size() != pages)
    throw InvalidArgument("page placement: " + std::to_string(intended.size()) + " intended node sets for " +
                          std::to_string(pages) + " pages");
  return query_pages(topology, area, [intended](std::size_t p) { return intended[p]; }, true);
}

PageBuffer::PageBuffer(std::size_t bytes) : bytes_(bytes) {
  if (bytes == 0) throw InvalidArgument("a page buffer needs at least 1 byte");
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) throw std::bad_alloc();
  data_ = static_cast<std::byte*>(p);
}
PageBuffer::PageBuffer(PageBuffer&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)), bytes_(std::exchange(other.bytes_, 0)) {}
PageBuffer& PageBuffer::operator=(PageBuffer&& other) noexcept {
  std::swap(data_, other.data_);
  std::swap(bytes_, other.bytes_);
  return *this;
}
PageBuffer::~PageBuffer() {
  if (data_ != nullptr) munmap(data_, bytes_);
}

PageBuffer allocate_with_policy(const Topology& topology, std::size_t bytes, MemoryPolicy policy,
                                const Location* where) {
  // What can be refused without asking the kernel is refused before anything is mapped.
  if (policy != MemoryPolicy::none) {
    require_this_system(topology, "bind memory");
    (void)policy_nodeset(topology, policy, where);
  }
  PageBuffer buffer(bytes);
  bind_memory(topology, buffer.bytes(), policy, where);  // on a throw the buffer unmaps itself
  return buffer;
}

}  // namespace hympi::locality
