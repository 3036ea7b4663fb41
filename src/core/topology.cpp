#include "hympi/core/topology.hpp"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <iomanip>
#include <map>
#include <memory>
#include <sstream>
#include <string_view>
#include <utility>

#include "hympi/contract.hpp"
#include "hympi/core/error.hpp"

namespace hympi {

// ---- Bitmap ----------------------------------------------------------------------------------
Bitmap::Bitmap() : set_(hwloc_bitmap_alloc()) {
  if (!set_) throw std::bad_alloc();
}
Bitmap::Bitmap(hwloc_const_bitmap_t set) : set_(hwloc_bitmap_dup(set)) {
  if (!set_) throw std::bad_alloc();
}
Bitmap::Bitmap(const Bitmap& other) : Bitmap(static_cast<hwloc_const_bitmap_t>(other.get())) {}
Bitmap& Bitmap::operator=(const Bitmap& other) {
  if (this != &other) *this = Bitmap(other);
  return *this;
}
int Bitmap::weight() const { return hwloc_bitmap_weight(get()); }
bool Bitmap::contains(unsigned index) const { return hwloc_bitmap_isset(get(), index) != 0; }
bool Bitmap::includes(const Bitmap& other) const { return hwloc_bitmap_isincluded(other.get(), get()) != 0; }
bool Bitmap::intersects(const Bitmap& other) const { return hwloc_bitmap_intersects(get(), other.get()) != 0; }
bool Bitmap::operator==(const Bitmap& other) const { return hwloc_bitmap_isequal(get(), other.get()) != 0; }
void Bitmap::add(const Bitmap& other) { hwloc_bitmap_or(get(), get(), other.get()); }
std::string Bitmap::to_list() const {
  char* text = nullptr;
  if (hwloc_bitmap_list_asprintf(&text, get()) < 0) throw std::bad_alloc();
  std::string out(text);
  std::free(text);
  return out;
}

// ---- Topology --------------------------------------------------------------------------------
namespace {
Topology::Handle init_topology() {
  hwloc_topology_t topo = nullptr;
  if (hwloc_topology_init(&topo) < 0)
    throw TopologyError(std::string("hwloc_topology_init failed: ") + std::strerror(errno));
  Topology::Handle owned(topo);
  // Caches are filtered out by default for some types; keep them all, we report them.
  hwloc_topology_set_cache_types_filter(topo, HWLOC_TYPE_FILTER_KEEP_ALL);
  return owned;
}

Topology::Handle finish_load(Topology::Handle topo, const std::string& what) {
  if (hwloc_topology_load(topo.get()) < 0) {
    const int err = errno;
    throw TopologyError("cannot load topology from " + what + ": " + std::strerror(err));
  }
  return topo;
}
}  // namespace

Topology Topology::this_machine() { return Topology(finish_load(init_topology(), "this machine")); }

Topology Topology::from_xml_file(const std::string& path) {
  // hwloc opens the file and reads it to its end: a FIFO would block it until someone writes.
  if (const std::string problem = file_problem(path); !problem.empty())
    throw TopologyError("hwloc XML '" + path + "' " + problem);
  Handle topo = init_topology();
  if (hwloc_topology_set_xml(topo.get(), path.c_str()) < 0) {
    const int err = errno;
    throw TopologyError("cannot read hwloc XML '" + path + "': " + std::strerror(err));
  }
  return Topology(finish_load(std::move(topo), "XML '" + path + "'"));
}

Topology Topology::from_xml_text(const std::string& xml) {
  Handle topo = init_topology();
  // hwloc wants the length including the terminating NUL, as hwloc_topology_export_xmlbuffer reports it.
  if (hwloc_topology_set_xmlbuffer(topo.get(), xml.c_str(), static_cast<int>(xml.size() + 1)) < 0) {
    const int err = errno;
    throw TopologyError(std::string("cannot read hwloc XML text: ") + std::strerror(err));
  }
  return Topology(finish_load(std::move(topo), "XML text"));
}

namespace {

/// Whether `token` is one level of a synthetic description, a type then ':' (optional in hwloc's syntax) then an
/// arity, "core:4" or "4"; its arity goes to `arity` (inf past double's range, which no limit lets through).
bool synthetic_level(std::string_view token, double& arity) {
  const std::size_t colon = token.find(':');
  std::string_view digits = token;
  if (colon != std::string_view::npos) {
    const std::string_view type = token.substr(0, colon);
    const auto word = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
    if (type.empty() || !std::isalpha(static_cast<unsigned char>(type.front())) || !std::ranges::all_of(type, word))
      return false;
    digits = token.substr(colon + 1);
  }
  if (digits.empty() || !std::ranges::all_of(digits, [](char c) { return c >= '0' && c <= '9'; })) return false;
  arity = 0;
  for (const char c : digits) arity = arity * 10 + (c - '0');
  return true;
}

/// The PUs a synthetic description makes: the product of its levels' arities ("pack:2 core:4 pu:2" and hwloc's
/// older "2 4 2": 16), what stands in parentheses (attributes) or brackets (memory children) left out; a token that
/// is no level is left for hwloc to refuse.
double synthetic_pus(std::string_view description) {
  double pus = 1;
  int depth = 0;
  std::size_t start = 0;
  for (std::size_t at = 0; at <= description.size(); ++at) {
    const char c = at < description.size() ? description[at] : ' ';
    const bool opens = c == '(' || c == '[', closes = c == ')' || c == ']';
    if (!opens && !closes && (depth > 0 || !std::isspace(static_cast<unsigned char>(c)))) continue;
    double arity = 0;
    if (depth == 0 && at > start && synthetic_level(description.substr(start, at - start), arity)) pus *= arity;
    depth = std::max(0, depth + (opens ? 1 : 0) - (closes ? 1 : 0));
    start = at + 1;
  }
  return pus;
}

}  // namespace

Topology Topology::from_synthetic(const std::string& description) {
  // hwloc's time to build a synthetic machine grows faster than its PUs: a typo's extra digit took minutes.
  if (const double pus = synthetic_pus(description); pus > contract::kMaxNodePus)
    throw TopologyError("topology 'synthetic:" + description + "' has " +
                        (pus < 1e18 ? std::to_string(static_cast<long long>(pus)) : std::string("over 10^18")) +
                        " PUs, more than hympi's limit of " + std::to_string(contract::kMaxNodePus) + " (" +
                        std::string(contract::kMaxNodePusReason) + ")");
  Handle topo = init_topology();
  if (hwloc_topology_set_synthetic(topo.get(), description.c_str()) < 0)
    throw TopologyError("invalid synthetic topology '" + description + "'");
  return Topology(finish_load(std::move(topo), "synthetic '" + description + "'"));
}

Topology Topology::from_spec(const std::string& spec) {
  if (spec.empty() || spec == "this") return this_machine();
  constexpr std::string_view prefix = "synthetic:";
  if (spec.starts_with(prefix)) return from_synthetic(spec.substr(prefix.size()));
  return from_xml_file(spec);
}

bool Topology::is_this_system() const { return hwloc_topology_is_thissystem(get()) != 0; }

namespace {
int count_or_one(hwloc_topology_t topo, hwloc_obj_type_t type) {
  const int n = hwloc_get_nbobjs_by_type(topo, type);
  return n > 0 ? n : 1;  // A machine without Package objects still has one package.
}
}  // namespace

int Topology::packages() const { return count_or_one(get(), HWLOC_OBJ_PACKAGE); }
int Topology::numa_nodes() const { return count_or_one(get(), HWLOC_OBJ_NUMANODE); }
int Topology::cores() const { return count_or_one(get(), HWLOC_OBJ_CORE); }
int Topology::pus() const { return count_or_one(get(), HWLOC_OBJ_PU); }

std::vector<CacheInfo> Topology::caches() const {
  std::map<int, CacheInfo> by_level;
  const hwloc_obj_type_t types[] = {HWLOC_OBJ_L1CACHE, HWLOC_OBJ_L2CACHE, HWLOC_OBJ_L3CACHE,
                                    HWLOC_OBJ_L4CACHE, HWLOC_OBJ_L5CACHE};
  for (hwloc_obj_type_t type : types) {
    const int n = hwloc_get_nbobjs_by_type(get(), type);
    for (int i = 0; i < n; ++i) {
      hwloc_obj_t obj = hwloc_get_obj_by_type(get(), type, static_cast<unsigned>(i));
      if (obj->attr->cache.type == HWLOC_OBJ_CACHE_INSTRUCTION) continue;
      CacheInfo& info = by_level[static_cast<int>(obj->attr->cache.depth)];
      info.level = static_cast<int>(obj->attr->cache.depth);
      info.size_bytes = obj->attr->cache.size;
      ++info.count;
    }
  }
  std::vector<CacheInfo> out;
  for (const auto& [level, info] : by_level) out.push_back(info);
  return out;
}

std::uint64_t Topology::last_level_cache_bytes() const {
  const auto levels = caches();
  if (levels.empty()) return 0;
  return levels.back().size_bytes * static_cast<std::uint64_t>(levels.back().count);
}

Bitmap Topology::set_of(hwloc_obj_type_t type, int index, const char* what) const {
  const int n = hwloc_get_nbobjs_by_type(get(), type);
  if (n == 0 && index == 0) return machine_set();
  if (index < 0 || index >= n)
    throw InvalidArgument(std::string(what) + " index " + std::to_string(index) + " out of range 0.." +
                          std::to_string(n - 1));
  return Bitmap(hwloc_get_obj_by_type(get(), type, static_cast<unsigned>(index))->cpuset);
}

Bitmap Topology::core_set(int index) const { return set_of(HWLOC_OBJ_CORE, index, "core"); }
Bitmap Topology::numa_set(int index) const { return set_of(HWLOC_OBJ_NUMANODE, index, "NUMA node"); }
Bitmap Topology::package_set(int index) const { return set_of(HWLOC_OBJ_PACKAGE, index, "package"); }
Bitmap Topology::machine_set() const { return Bitmap(hwloc_topology_get_topology_cpuset(get())); }
Bitmap Topology::machine_nodeset() const { return Bitmap(hwloc_topology_get_topology_nodeset(get())); }

int Topology::l3_caches() const {
  // L3 objects may be instruction caches on exotic machines; only data/unified ones hold an array.
  int n = 0;
  for (hwloc_obj_t obj = hwloc_get_next_obj_by_type(get(), HWLOC_OBJ_L3CACHE, nullptr); obj != nullptr;
       obj = hwloc_get_next_obj_by_type(get(), HWLOC_OBJ_L3CACHE, obj))
    if (obj->attr->cache.type != HWLOC_OBJ_CACHE_INSTRUCTION) ++n;
  return n;
}

Bitmap Topology::l3_set(int index) const {
  int seen = 0;
  for (hwloc_obj_t obj = hwloc_get_next_obj_by_type(get(), HWLOC_OBJ_L3CACHE, nullptr); obj != nullptr;
       obj = hwloc_get_next_obj_by_type(get(), HWLOC_OBJ_L3CACHE, obj)) {
    if (obj->attr->cache.type == HWLOC_OBJ_CACHE_INSTRUCTION) continue;
    if (seen++ == index) return Bitmap(obj->cpuset);
  }
  throw InvalidArgument("L3 cache index " + std::to_string(index) + " out of range 0.." + std::to_string(seen - 1));
}

Bitmap Topology::numa_nodeset(int index) const {
  const int n = hwloc_get_nbobjs_by_type(get(), HWLOC_OBJ_NUMANODE);
  if (index < 0 || index >= n)
    throw InvalidArgument("NUMA node index " + std::to_string(index) + " out of range 0.." + std::to_string(n - 1));
  return Bitmap(hwloc_get_obj_by_type(get(), HWLOC_OBJ_NUMANODE, static_cast<unsigned>(index))->nodeset);
}

Bitmap Topology::nodeset_of(const Bitmap& cpuset) const {
  Bitmap out;
  hwloc_cpuset_to_nodeset(get(), cpuset.get(), out.get());
  return out;
}

int Topology::package_of_core(int index) const {
  hwloc_obj_t core = hwloc_get_obj_by_type(get(), HWLOC_OBJ_CORE, static_cast<unsigned>(index));
  if (core == nullptr) throw InvalidArgument("core index " + std::to_string(index) + " out of range");
  hwloc_obj_t pkg = hwloc_get_ancestor_obj_by_type(get(), HWLOC_OBJ_PACKAGE, core);
  return pkg != nullptr ? static_cast<int>(pkg->logical_index) : 0;
}

PuLocation Topology::locate_pu(unsigned os_index) const {
  hwloc_obj_t pu = hwloc_get_pu_obj_by_os_index(get(), os_index);
  if (pu == nullptr) throw TopologyError("no PU with OS index " + std::to_string(os_index));
  PuLocation loc;
  loc.pu_os = static_cast<int>(os_index);
  loc.pu = static_cast<int>(pu->logical_index);
  hwloc_obj_t core = hwloc_get_ancestor_obj_by_type(get(), HWLOC_OBJ_CORE, pu);
  loc.core = core != nullptr ? static_cast<int>(core->logical_index) : loc.pu;
  hwloc_obj_t pkg = hwloc_get_ancestor_obj_by_type(get(), HWLOC_OBJ_PACKAGE, pu);
  loc.package = pkg != nullptr ? static_cast<int>(pkg->logical_index) : 0;
  loc.numa = 0;
  const int numas = hwloc_get_nbobjs_by_type(get(), HWLOC_OBJ_NUMANODE);
  for (int i = 0; i < numas; ++i) {
    hwloc_obj_t numa = hwloc_get_obj_by_type(get(), HWLOC_OBJ_NUMANODE, static_cast<unsigned>(i));
    if (hwloc_bitmap_isset(numa->cpuset, os_index)) {
      loc.numa = i;
      break;
    }
  }
  return loc;
}

nlohmann::json Topology::summary() const {
  nlohmann::json caches_json = nlohmann::json::array();
  for (const CacheInfo& c : caches())
    caches_json.push_back({{"level", c.level}, {"size_bytes", c.size_bytes}, {"count", c.count}});
  hwloc_obj_t root = hwloc_get_root_obj(get());
  const char* arch = hwloc_obj_get_info_by_name(root, "Architecture");
  return {{"packages", packages()},
          {"numa_nodes", numa_nodes()},
          {"cores", cores()},
          {"pus", pus()},
          {"caches", caches_json},
          {"memory_bytes", root->total_memory},
          {"architecture", arch != nullptr ? arch : ""},
          {"this_system", is_this_system()}};
}

std::string Topology::hash() const {
  nlohmann::json s = summary();
  s.erase("this_system");
  s.erase("memory_bytes");
  std::uint64_t h = 1469598103934665603ULL;  // FNV-1a: stable across runs and compilers.
  for (unsigned char c : s.dump()) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  std::ostringstream os;
  os << std::hex << std::setw(16) << std::setfill('0') << h;
  return os.str();
}

std::string Topology::to_xml() const {
  char* buffer = nullptr;
  int length = 0;
  if (hwloc_topology_export_xmlbuffer(get(), &buffer, &length, 0) < 0)
    throw TopologyError(std::string("cannot export topology as XML: ") + std::strerror(errno));
  // hwloc allocated the buffer and must free it, also when the copy below throws.
  const auto release = [topo = get()](char* p) { hwloc_free_xmlbuffer(topo, p); };
  const std::unique_ptr<char, decltype(release)> owned(buffer, release);
  return std::string(owned.get(), static_cast<std::size_t>(length > 0 ? length - 1 : 0));
}

}  // namespace hympi
