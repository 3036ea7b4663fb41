// hympi::h5 on 1 to 3 ranks: a field written by one decomposition reads back bit for bit into another,
// single precision rounds, components and empty blocks, vectors; a flipped byte fails the checksum; a
// checkpoint appears under its name only when committed; a restart rejects another app's, another size's,
// a truncated or a foreign file; an unwritable directory is an IoError; snapshots get their XDMF sidecar.
#include <gtest/gtest.h>
#include <hdf5.h>
#include <fcntl.h>
#include <mpi.h>
#include <sys/file.h>
#include <unistd.h>

#include <atomic>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <future>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

#include "hympi/grid/cart.hpp"
#include "hympi/grid/grid3d.hpp"
#include "hympi/h5/checkpoint.hpp"
#include "hympi/h5/h5.hpp"
#include "mpi_world.hpp"

using namespace hympi;
using namespace hympi::h5;
namespace fs = std::filesystem;

namespace {

/// A value per global point that is not a float and differs everywhere.
double value(long x, long y, long z) { return std::sqrt(2.0) * double(x + 1) + double(y) / 3.0 + 0.01 * double(z); }

/// A directory every rank shares, removed at the end.
class Scratch {
 public:
  /// Under `base`: /tmp, or /dev/shm for a file system without direct I/O.
  explicit Scratch(const std::string& base = "/tmp") {
    const test::World world;
    std::string path(256, '\0');
    if (world.rank == 0) {
      std::string pattern = base + "/hympi-h5-XXXXXX";
      path = mkdtemp(pattern.data());
      path.resize(256, '\0');
    }
    MPI_Bcast(path.data(), 256, MPI_CHAR, 0, MPI_COMM_WORLD);
    dir_ = path.c_str();
  }
  ~Scratch() {
    MPI_Barrier(MPI_COMM_WORLD);
    if (test::World().rank == 0) fs::remove_all(dir_);
  }
  [[nodiscard]] std::string file(const std::string& name) const { return (dir_ / name).string(); }

 private:
  fs::path dir_;
};

/// This rank's block of `global` when the ranks split axis `axis`.
Box3 split_along(const std::array<long, 3>& global, int axis) {
  const test::World world;
  std::array<int, 3> dims{1, 1, 1}, coords{0, 0, 0};
  dims[std::size_t(axis)] = world.size;
  coords[std::size_t(axis)] = world.rank;
  return block_range(global, dims, coords);
}

Grid3D<double> filled(const Box3& box, int ghost) {
  Grid3D<double> grid(box, ghost);
  for (auto& v : grid.data()) v = -1.0;  // ghosts and padding must not reach the file
  const auto e = grid.extent();
  for (long k = 0; k < e[2]; ++k)
    for (long j = 0; j < e[1]; ++j)
      for (long i = 0; i < e[0]; ++i) grid(i, j, k) = value(grid.global(0, i), grid.global(1, j), grid.global(2, k));
  return grid;
}

/// Owned points of `grid` that differ from value() at their global index.
long mismatches(const Grid3D<double>& grid) {
  const auto e = grid.extent();
  long wrong = 0;
  for (long k = 0; k < e[2]; ++k)
    for (long j = 0; j < e[1]; ++j)
      for (long i = 0; i < e[0]; ++i)
        wrong += grid(i, j, k) != value(grid.global(0, i), grid.global(1, j), grid.global(2, k));
  return wrong;
}

void flip_byte(const std::string& path, long offset) {
  std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
  f.seekg(offset);
  char c = 0;
  f.get(c);
  f.seekp(offset);
  f.put(static_cast<char>(c ^ 0x10));
}

/// Byte offset of dataset `name`'s data in `path` (serial HDF5 on rank 0).
long data_offset(const std::string& path, const std::string& name) {
  const hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  const hid_t dataset = H5Dopen2(file, name.c_str(), H5P_DEFAULT);
  const long offset = static_cast<long>(H5Dget_offset(dataset));
  H5Dclose(dataset);
  H5Fclose(file);
  return offset;
}

const std::array<long, 3> kGlobal{7, 5, 6};

/// Writes an rb3d checkpoint at `path` whose dataset "u" is the test field and whose header has `step` and
/// `state`, lets `more` write further datasets, and commits it unless `commit` is false (as when an exception
/// abandons it). Collective.
void write_checkpoint(const std::string& path, long step, const nlohmann::json& state, bool commit = true,
                      const std::function<void(File&)>& more = {}) {
  const Grid3D<double> field = filled(split_along(kGlobal, 2), 1);
  CheckpointWriter writer(MPI_COMM_WORLD, path, H5Options{}, {"rb3d", kGlobal, step, 0.0, "1x1", state});
  writer.file().write("u", Block3::of(field, kGlobal), field.data());
  if (more) more(writer.file());
  if (commit) writer.commit();
}

}  // namespace

TEST(H5, FieldReadsBackBitwiseIntoAnotherDecomposition) {
  const Scratch scratch;
  const std::string path = scratch.file("field.h5");
  {
    const Grid3D<double> written = filled(split_along(kGlobal, 2), 2);
    File file = File::create(MPI_COMM_WORLD, path, H5Options{});
    file.write("u", Block3::of(written, kGlobal), written.data());
    file.close();
  }
  File file = File::open(MPI_COMM_WORLD, path, H5Options{});
  Grid3D<double> read(split_along(kGlobal, 0), 1);
  file.read("u", Block3::of(read, kGlobal), read.data());
  EXPECT_EQ(mismatches(read), 0);
  EXPECT_EQ(read(-1, 0, 0), 0.0) << "a ghost was written by the read";
}

TEST(H5, OnePlanePerSlabWithUnevenBlocks) {
  // One z plane per H5Dwrite / H5Dread: ranks own different plane counts (7 planes over 2 or 3 ranks),
  // so some take part in the last collective transfers with nothing.
  const Scratch scratch;
  const std::string path = scratch.file("slabs.h5");
  const std::array<long, 3> global{5, 4, 7};
  H5Options options;
  options.slab_bytes = 1;
  {
    const Grid3D<double> written = filled(split_along(global, 2), 1);
    File file = File::create(MPI_COMM_WORLD, path, options);
    file.write("u", Block3::of(written, global), written.data());
    file.close();
  }
  File file = File::open(MPI_COMM_WORLD, path, options);
  Grid3D<double> read(split_along(global, 2), 0);
  file.read("u", Block3::of(read, global), read.data());
  EXPECT_EQ(mismatches(read), 0);
}

TEST(H5, SinglePrecisionRoundsEveryValue) {
  const Scratch scratch;
  const std::string path = scratch.file("single.h5");
  const Grid3D<double> written = filled(split_along(kGlobal, 1), 1);
  {
    File file = File::create(MPI_COMM_WORLD, path, H5Options{});
    file.write("u", Block3::of(written, kGlobal), written.data(), Precision::single_precision);
    file.close();
  }
  File file = File::open(MPI_COMM_WORLD, path, H5Options{});
  Grid3D<double> read(written.box(), 0);
  file.read("u", Block3::of(read, kGlobal), read.data());
  const auto e = read.extent();
  long wrong = 0, exact = 0;
  for (long k = 0; k < e[2]; ++k)
    for (long j = 0; j < e[1]; ++j)
      for (long i = 0; i < e[0]; ++i) {
        wrong += read(i, j, k) != double(float(written(i, j, k)));
        exact += read(i, j, k) == written(i, j, k);
      }
  EXPECT_EQ(wrong, 0);
  EXPECT_LT(exact, e[0] * e[1] * e[2]) << "single precision did not round";
}

TEST(H5, ComponentsAndEmptyBlocks) {
  // Rank 0 owns the whole 5-component field; the other ranks take part with nothing.
  const Scratch scratch;
  const test::World world;
  const std::string path = scratch.file("zones.h5");
  const std::array<long, 3> global{4, 3, 2};
  const long points = global[0] * global[1] * global[2];
  std::vector<double> field(world.rank == 0 ? std::size_t(points * 5) : 0);
  for (std::size_t i = 0; i < field.size(); ++i) field[i] = double(i) + 0.25;
  const Box3 box = world.rank == 0 ? Box3{{0, 0, 0}, global} : Box3{};
  const Block3 block{global, box, MemoryLayout3::dense(world.rank == 0 ? global : std::array<long, 3>{0, 0, 0}, 5)};
  {
    File file = File::create(MPI_COMM_WORLD, path, H5Options{});
    file.write("zone_000/u", block, field);
    file.close();
  }
  File file = File::open(MPI_COMM_WORLD, path, H5Options{});
  EXPECT_TRUE(file.exists("zone_000/u"));
  EXPECT_FALSE(file.exists("zone_001/u"));
  // Component 3 alone, every rank reading a slab along z.
  const Box3 slab = split_along(global, 2);
  std::vector<double> third(std::size_t(slab.count() * 5), -1.0);
  MemoryLayout3 memory = MemoryLayout3::dense(slab.size(), 5);
  Block3 whole{global, slab, memory};
  file.read("zone_000/u", whole, third);
  for (std::size_t i = 0; i < third.size(); ++i)
    EXPECT_EQ(third[i], double(std::size_t(slab.low[2] * global[0] * global[1] * 5) + i) + 0.25);
}

TEST(H5, VectorsWithUnevenParts) {
  const Scratch scratch;
  const test::World world;
  const std::string path = scratch.file("vector.h5");
  const long n = 11;
  const long begin = n * world.rank / world.size, end = n * (world.rank + 1) / world.size;
  std::vector<double> mine;
  for (long i = begin; i < end; ++i) mine.push_back(1.0 / double(i + 3));
  {
    File file = File::create(MPI_COMM_WORLD, path, H5Options{});
    file.write_vector("p", n, begin, mine);
    file.set_attribute("state", {{"rho", 0.1}, {"residuals", {1.0, 0.5}}});
    file.close();
  }
  File file = File::open(MPI_COMM_WORLD, path, H5Options{});
  // Read back by another split: everything on the last rank.
  std::vector<double> all(world.rank == world.size - 1 ? std::size_t(n) : 0);
  file.read_vector("p", 0, all);
  for (std::size_t i = 0; i < all.size(); ++i) EXPECT_EQ(all[i], 1.0 / double(i + 3));
  EXPECT_EQ(file.attribute("state")["residuals"][1].get<double>(), 0.5);
  EXPECT_THROW((void)file.attribute("absent"), BadFile);
}

TEST(H5, FlippedDataByteFailsTheChecksumOnEveryRank) {
  const Scratch scratch;
  const test::World world;
  const std::string path = scratch.file("flip.h5");
  const Grid3D<double> written = filled(split_along(kGlobal, 2), 0);
  {
    File file = File::create(MPI_COMM_WORLD, path, H5Options{});
    file.write("u", Block3::of(written, kGlobal), written.data());
    file.close();
  }
  if (world.rank == 0) flip_byte(path, data_offset(path, "u") + 8 * 17 + 3);
  MPI_Barrier(MPI_COMM_WORLD);
  File file = File::open(MPI_COMM_WORLD, path, H5Options{});
  Grid3D<double> read(split_along(kGlobal, 1), 0);
  try {
    file.read("u", Block3::of(read, kGlobal), read.data());
    ADD_FAILURE() << "a corrupted dataset was read without error";
  } catch (const BadFile& e) {
    EXPECT_NE(std::string(e.what()).find("checksum"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
  }
}

TEST(H5, CheckpointAppearsOnlyWhenCommitted) {
  const Scratch scratch;
  const test::World world;
  const std::string path = scratch.file("run.h5");
  const nlohmann::json size = kGlobal;
  write_checkpoint(path, 10, {{"k", 10}});
  write_checkpoint(path, 20, {{"k", 20}}, false);  // abandoned: the temporary goes, the committed file stays
  MPI_Barrier(MPI_COMM_WORLD);
  EXPECT_FALSE(fs::exists(path + ".tmp"));
  {
    CheckpointReader reader(MPI_COMM_WORLD, path, H5Options{}, "rb3d", size);
    EXPECT_EQ(reader.header().step, 10);
    EXPECT_EQ(reader.header().state["k"], 10);
    EXPECT_EQ(reader.header().layout, "1x1");
  }
  EXPECT_THROW(CheckpointReader(MPI_COMM_WORLD, path, H5Options{}, "spmv3d", size), BadFile);
  EXPECT_THROW(CheckpointReader(MPI_COMM_WORLD, path, H5Options{}, "rb3d", nlohmann::json{8, 5, 6}), BadFile);
  EXPECT_THROW(CheckpointReader(MPI_COMM_WORLD, scratch.file("absent.h5"), H5Options{}, "rb3d", size), BadFile);
  // A valid HDF5 file that is no checkpoint, and a checkpoint cut short.
  {
    File plain = File::create(MPI_COMM_WORLD, scratch.file("plain.h5"), H5Options{});
    plain.close();
  }
  EXPECT_THROW(CheckpointReader(MPI_COMM_WORLD, scratch.file("plain.h5"), H5Options{}, "rb3d", size), BadFile);
  if (world.rank == 0) fs::resize_file(path, fs::file_size(path) / 2);
  MPI_Barrier(MPI_COMM_WORLD);
  EXPECT_THROW(CheckpointReader(MPI_COMM_WORLD, path, H5Options{}, "rb3d", size), BadFile);
}

/// Rewrites root attribute `key` of `path` (a fixed-length string, as hympi stores them) with `text`, serially:
/// what a user editing a checkpoint with h5py does.
void rewrite_text_attribute(const std::string& path, const std::string& key, const std::string& text) {
  const hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
  ASSERT_GE(file, 0);
  H5Adelete(file, key.c_str());
  const hid_t type = H5Tcopy(H5T_C_S1);
  H5Tset_size(type, text.size());
  const hid_t space = H5Screate(H5S_SCALAR);
  const hid_t attr = H5Acreate2(file, key.c_str(), type, space, H5P_DEFAULT, H5P_DEFAULT);
  EXPECT_GE(H5Awrite(attr, type, text.data()), 0);
  H5Aclose(attr);
  H5Sclose(space);
  H5Tclose(type);
  H5Fclose(file);
}

TEST(H5, HeaderChecksumChangesWithEveryHeaderValue) {
  const CheckpointHeader base{"rb3d", nlohmann::json{8, 8, 8}, 20, 0.5, "2x1", {{"residuals", {1.0, 0.25}}}};
  const std::string sum = header_checksum(base);
  EXPECT_EQ(sum.size(), 16u);
  EXPECT_EQ(header_checksum(base), sum);
  auto changed = base;
  changed.step = 21;
  EXPECT_NE(header_checksum(changed), sum);
  changed = base;
  changed.time = 0.5000000000000001;
  EXPECT_NE(header_checksum(changed), sum);
  changed = base;
  changed.state["residuals"][1] = 0.35;  // one digit
  EXPECT_NE(header_checksum(changed), sum);
  changed = base;
  changed.layout = "1x2";
  EXPECT_NE(header_checksum(changed), sum);
  changed = base;
  changed.global_size = nlohmann::json{8, 8, 9};
  EXPECT_NE(header_checksum(changed), sum);
}

TEST(H5, ChangedHeaderIsRefusedByTheReaderAndTheSerialCheck) {
  const Scratch scratch;
  const test::World world;
  const std::string path = scratch.file("header.h5");
  const nlohmann::json size = kGlobal;
  write_checkpoint(path, 10, {{"residuals", {1.5, 0.75}}});
  MPI_Barrier(MPI_COMM_WORLD);
  long checked_step = -1;
  const HeaderCheck check = [&](const std::string&, const CheckpointHeader& h) { checked_step = h.step; };
  if (world.rank == 0) {
    // Intact: the serial check (no collective) reads it whole and hands the header to the app's check.
    EXPECT_EQ(check_checkpoint_file(path, "rb3d", size, check).step, 10);
    EXPECT_EQ(checked_step, 10);
    EXPECT_THROW((void)check_checkpoint_file(path, "rb3d", size,
                                             [](const std::string& p, const CheckpointHeader&) {
                                               throw BadFile(p + ": the app's own refusal");
                                             }),
                 BadFile);
  }
  // One digit of the residual history, same length.
  if (world.rank == 0) rewrite_text_attribute(path, "state", "{\"residuals\":[1.5,0.85]}");
  MPI_Barrier(MPI_COMM_WORLD);
  const auto expect_refused = [&](const std::string& words) {
    try {
      CheckpointReader reader(MPI_COMM_WORLD, path, H5Options{}, "rb3d", size, check);
      ADD_FAILURE() << "a changed header was accepted";
    } catch (const BadFile& e) {
      EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << e.what();
    }
    if (world.rank == 0) {
      try {
        (void)check_checkpoint_file(path, "rb3d", size, check);
        ADD_FAILURE() << "the serial check accepted a changed header";
      } catch (const BadFile& e) {
        EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << e.what();
      }
    }
    MPI_Barrier(MPI_COMM_WORLD);
  };
  expect_refused("header fails its checksum");
  // A checkpoint without the checksum (an older hympi's) is refused, saying why.
  if (world.rank == 0) {
    const hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
    H5Adelete(file, "header_checksum");
    H5Fclose(file);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  expect_refused("no header checksum");
}

TEST(H5, SerialCheckFindsAFlippedDataByte) {
  const Scratch scratch;
  const test::World world;
  const std::string path = scratch.file("serial.h5");
  const nlohmann::json size = kGlobal;
  write_checkpoint(path, 10, {}, true, [&](File& file) {
    file.write_vector("v", 5, world.rank == 0 ? 0 : 5, std::vector<double>(world.rank == 0 ? 5 : 0, 0.5));
  });
  MPI_Barrier(MPI_COMM_WORLD);
  if (world.rank == 0) {
    EXPECT_NO_THROW((void)check_checkpoint_file(path, "rb3d", size, {}));
    flip_byte(path, data_offset(path, "u") + 8 * 17 + 3);
    try {
      (void)check_checkpoint_file(path, "rb3d", size, {});
      ADD_FAILURE() << "a flipped byte passed the serial check";
    } catch (const BadFile& e) {
      EXPECT_NE(std::string(e.what()).find("dataset 'u'"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("fails its checksum"), std::string::npos) << e.what();
    }
  }
  MPI_Barrier(MPI_COMM_WORLD);
}

TEST(H5, UnwritableDirectoryIsAnIoErrorOnEveryRank) {
  const Scratch scratch;
  const test::World world;
  // A directory below a regular file cannot exist, even for root.
  if (world.rank == 0) std::ofstream(scratch.file("regular")) << "x";
  MPI_Barrier(MPI_COMM_WORLD);
  try {
    File::create(MPI_COMM_WORLD, scratch.file("regular") + "/c.h5", H5Options{});
    ADD_FAILURE() << "created a file below a regular file";
  } catch (const IoError& e) {
    EXPECT_NE(std::string(e.what()).find("regular/c.h5"), std::string::npos) << e.what();
  }
}

TEST(H5, OneWriterPerCheckpointAndEveryRankHearsOfAnother) {
  const Scratch scratch;
  const test::World world;
  const std::string path = scratch.file("run.h5");
  // Another process's flock, as a killed sweep's launch still running holds it (flock locks belong to the open
  // file, so a second open of the same file in this process conflicts like another process would).
  int other = -1;
  if (world.rank == 0) {
    other = ::open(CheckpointLock::lock_path(path).c_str(), O_RDWR | O_CREAT, 0644);
    ASSERT_EQ(::flock(other, LOCK_EX | LOCK_NB), 0);
  }
  try {
    const CheckpointLock lock(MPI_COMM_WORLD, path, 0.2);
    ADD_FAILURE() << "took a checkpoint another process writes";
  } catch (const IoError& e) {
    EXPECT_NE(std::string(e.what()).find("run.h5 is being written by another process"), std::string::npos)
        << e.what();
  }
  if (world.rank == 0) ::close(other);  // the other writer died: the lock is free
  {
    const CheckpointLock lock(MPI_COMM_WORLD, path, 0.2);
    EXPECT_THROW(CheckpointLock(MPI_COMM_WORLD, path, 0.1), IoError);  // held while it lives
  }
  MPI_Barrier(MPI_COMM_WORLD);
  EXPECT_FALSE(fs::exists(CheckpointLock::lock_path(path)));  // released and removed: no lock file left behind
  MPI_Barrier(MPI_COMM_WORLD);  // every rank has looked before rank 0 creates it again
  const CheckpointLock again(MPI_COMM_WORLD, path, 0.2);  // and free again
}

TEST(H5, BackgroundWriterOverlapsItsCallerWithOneJobInFlight) {
  using namespace std::chrono_literals;
  BackgroundWriter writer;
  std::promise<void> release;
  std::atomic<bool> first_done{false}, second_saw_first_done{false};
  // start() returns while the job is blocked: the caller (the solver) is not held up by the write.
  writer.start([&, go = release.get_future().share()] {
    go.wait();
    first_done = true;
  });
  EXPECT_TRUE(writer.in_flight());
  EXPECT_FALSE(first_done);
  // A second checkpoint waits for the first: its start() does not return while the first job is blocked.
  auto second = std::async(std::launch::async, [&] {
    writer.start([&] { second_saw_first_done = first_done.load(); });
  });
  EXPECT_EQ(second.wait_for(200ms), std::future_status::timeout);
  release.set_value();
  second.get();
  EXPECT_GE(writer.wait(), 0.0);
  EXPECT_TRUE(second_saw_first_done);
  EXPECT_FALSE(writer.in_flight());
  EXPECT_EQ(writer.wait(), 0.0);  // nothing in flight
}

TEST(H5, BackgroundWriterFailureReachesTheCallerWithItsReason) {
  BackgroundWriter writer;
  writer.start([] { throw IoError("cannot write /scratch/run.h5.tmp: No space left on device"); });
  bool ran = false;
  try {
    writer.start([&] { ran = true; });  // the next checkpoint hears of the failure instead of starting
    ADD_FAILURE() << "a failed write went unnoticed";
  } catch (const IoError& e) {
    EXPECT_STREQ(e.what(), "cannot write /scratch/run.h5.tmp: No space left on device");
  }
  EXPECT_FALSE(ran);
  EXPECT_FALSE(writer.in_flight());
  // The real job's own reason: a staged write into a file that is not there.
  StagedData staged;
  staged.add_piece(0, staged.reserve(8, 0), 8);
  writer.start([&] { staged.write_into("/nonexistent-dir/run.h5.tmp"); });
  try {
    (void)writer.wait();
    ADD_FAILURE() << "a write into a missing directory succeeded";
  } catch (const IoError& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent-dir/run.h5.tmp: No such file"), std::string::npos) << e.what();
  }
}

TEST(H5, CheckpointWrittenInTheBackgroundIsPublishedByTheNextAndByFinish) {
  const Scratch scratch;
  const test::World world;
  IoOptions options;
  options.checkpoint_path = scratch.file("run.h5");
  options.checkpoint_every = 10;
  const nlohmann::json size = kGlobal;
  // Split in x: every row of a rank's block is a piece of its own in the file.
  const Grid3D<double> field = filled(split_along(kGlobal, 0), 1);
  const long n = 11, begin = n * world.rank / world.size, end = n * (world.rank + 1) / world.size;
  std::vector<double> vector;
  for (long i = begin; i < end; ++i) vector.push_back(1.0 / double(i + 3));
  const auto write = [&](File& file) {
    file.write("u", Block3::of(field, kGlobal), field.data());
    file.write_vector("p", n, begin, vector);
  };
  const auto check = [&](long step) {
    CheckpointReader reader(MPI_COMM_WORLD, options.checkpoint_path, H5Options{}, "rb3d", size);
    EXPECT_EQ(reader.header().step, step);
    Grid3D<double> read(split_along(kGlobal, 2), 1);
    reader.file().read("u", Block3::of(read, kGlobal), read.data());
    EXPECT_EQ(mismatches(read), 0);
    std::vector<double> all(world.rank == 0 ? std::size_t(n) : 0);
    reader.file().read_vector("p", 0, all);
    for (std::size_t i = 0; i < all.size(); ++i) EXPECT_EQ(all[i], 1.0 / double(i + 3));
    reader.file().close();
  };
  IoSession io(MPI_COMM_WORLD, options, "rb3d", size, "1x1");
  io.checkpoint(10, 0.0, {{"k", 10}}, write);
  MPI_Barrier(MPI_COMM_WORLD);
  // Still in flight: the previous checkpoint (none here) keeps the name until every rank's part is on disk.
  EXPECT_FALSE(fs::exists(options.checkpoint_path));
  io.checkpoint(20, 0.0, {{"k", 20}}, write);
  check(10);
  io.finish();
  check(20);
  MPI_Barrier(MPI_COMM_WORLD);
  EXPECT_FALSE(fs::exists(options.checkpoint_path + ".tmp"));
  if (world.rank == 0) {  // every dataset's checksum against the bytes on disk, serially
    EXPECT_EQ(check_checkpoint_file(options.checkpoint_path, "rb3d", size, {}).step, 20);
  }
  EXPECT_EQ(io.totals().checkpoints, 2);
  EXPECT_GT(io.totals().checkpoint_background_s, 0.0);
  // Chunked datasets have no place in the file before HDF5 writes them: no staging for them.
  H5Options chunked;
  chunked.chunk = {4, 4, 4};
  File file = File::create(MPI_COMM_WORLD, scratch.file("chunked.h5"), chunked);
  StagedData staging;
  EXPECT_THROW(file.stage_into(staging), InvalidArgument);
  file.close();
}

/// Options of a run that writes its checkpoints to "run.h5" in `scratch`, one every `every` steps.
IoOptions checkpoints_in(const Scratch& scratch, int every) {
  IoOptions options;
  options.checkpoint_path = scratch.file("run.h5");
  options.checkpoint_every = every;
  return options;
}

/// Starts the checkpoint of `step` in `io`: `field` as dataset "u" of the kGlobal grid.
void checkpoint_field(IoSession& io, long step, const Grid3D<double>& field) {
  io.checkpoint(step, 0.0, {{"k", step}}, [&](File& f) { f.write("u", Block3::of(field, kGlobal), field.data()); });
}

TEST(H5, ProgressPublishesACheckpointOnceEveryRankHasWrittenIt) {
  const Scratch scratch;
  const IoOptions options = checkpoints_in(scratch, 10);
  const nlohmann::json size = kGlobal;
  IoSession io(MPI_COMM_WORLD, options, "rb3d", size, "1x1");
  io.progress();  // nothing in flight: nothing to agree on
  checkpoint_field(io, 10, filled(split_along(kGlobal, 1), 1));
  // The solver's steps go on, each calling progress(): the checkpoint appears under its name once written, not at
  // the next checkpoint (a run killed in between keeps it).
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (!fs::exists(options.checkpoint_path) && std::chrono::steady_clock::now() < deadline) {
    io.progress();
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  int published = fs::exists(options.checkpoint_path) ? 1 : 0, everywhere = 0;
  MPI_Allreduce(&published, &everywhere, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  ASSERT_EQ(everywhere, 1) << "not published within 60 s of steps";
  {
    CheckpointReader reader(MPI_COMM_WORLD, options.checkpoint_path, H5Options{}, "rb3d", size);
    EXPECT_EQ(reader.header().step, 10);
    Grid3D<double> read(split_along(kGlobal, 0), 1);
    reader.file().read("u", Block3::of(read, kGlobal), read.data());
    EXPECT_EQ(mismatches(read), 0);
    reader.file().close();
  }
  io.finish();  // published already: nothing left but the accounts
  MPI_Barrier(MPI_COMM_WORLD);
  EXPECT_FALSE(fs::exists(options.checkpoint_path + ".tmp"));
  EXPECT_EQ(io.totals().checkpoints, 1);
  EXPECT_GT(io.totals().checkpoint_bytes, 0.0);
}

/// The upper median (the element at size / 2 once sorted), as IoSession takes that of its recent quiet steps.
double upper_median(std::vector<double> values) {
  const auto middle = values.begin() + static_cast<long>(values.size() / 2);
  std::nth_element(values.begin(), middle, values.end());
  return *middle;
}

TEST(H5, StepsAreCountedByWhetherACheckpointIsBeingWrittenLessTheCheckpointsOwnTime) {
  const Scratch scratch;
  IoSession io(MPI_COMM_WORLD, checkpoints_in(scratch, 10), "rb3d", nlohmann::json(kGlobal), "1x1");
  const Grid3D<double> field = filled(split_along(kGlobal, 1), 1);
  const auto totals = [&] { return io.totals(); };
  const auto sleep = [](double seconds) { std::this_thread::sleep_for(std::chrono::duration<double>(seconds)); };
  // A step runs from one progress() to the next, so it lies within [the clock before the call that began it, the
  // clock after the call that ends it], and it holds at least what was slept in it: bounds on what each quiet step
  // counts, hence on the median a step beside the writer is compared with.
  std::vector<double> quiet_low, quiet_high;
  double began = MPI_Wtime();
  io.progress();
  const auto end_step = [&](double slept) {
    const IoTotals was = totals();
    const double before = MPI_Wtime();
    io.progress();
    const double after = MPI_Wtime();
    if (totals().steps_writing == was.steps_writing) {
      quiet_low.push_back(slept);
      quiet_high.push_back(after - began);
    }
    began = before;
  };
  // Before the first checkpoint a run warms up: no step counts (they are the first steps' reference only). One
  // long step among them, as rb3d's residual every 10 steps: the reference is their median, not their mean.
  for (const double slept : {0.005, 0.1, 0.005}) {
    sleep(slept);
    end_step(slept);
  }
  EXPECT_EQ(totals().steps_writing + totals().steps_quiet, 0);
  const auto beside_the_writer = [&](const IoTotals& was) {
    const double seconds = totals().steps_writing_s - was.steps_writing_s;
    const double excess = totals().steps_writing_excess_s - was.steps_writing_excess_s;
    EXPECT_EQ(totals().steps_writing, was.steps_writing + 1);
    EXPECT_GE(excess, seconds - upper_median(quiet_high));
    EXPECT_LE(excess, seconds - upper_median(quiet_low));
    return seconds;
  };
  // A step during which a checkpoint starts runs beside its writer.
  IoTotals was = totals();
  checkpoint_field(io, 10, field);
  sleep(0.005);
  end_step(0.005);
  EXPECT_GE(beside_the_writer(was), 0.005);
  EXPECT_EQ(totals().steps_quiet, 0);
  // Once it is published (finish() waits for it on every rank alike), every step is quiet.
  io.finish();
  end_step(0);
  was = totals();
  for (int k = 0; k < 4; ++k) {
    sleep(0.005);
    end_step(0.005);
  }
  EXPECT_EQ(totals().steps_writing, was.steps_writing);
  EXPECT_EQ(totals().steps_quiet, was.steps_quiet + 4);
  EXPECT_GE(totals().steps_quiet_s - was.steps_quiet_s, 4 * 0.005);
  // The checkpoint's own time (the solver thread's, in checkpoint_s) is not the step's: the step lies within
  // [t0, t1] and holds the checkpoint() call, so what it counts is at most t1 - t0 less that call's time.
  const double t0 = MPI_Wtime();
  end_step(0);
  was = totals();
  sleep(0.005);
  checkpoint_field(io, 20, field);
  const double own = totals().checkpoint_s - was.checkpoint_s;
  sleep(0.005);
  end_step(0.01);
  const double t1 = MPI_Wtime();
  const double seconds = beside_the_writer(was);
  EXPECT_GE(seconds, 2 * 0.005);
  EXPECT_LE(seconds, (t1 - t0) - own);
  io.finish();
  const nlohmann::json record = io.to_json();
  EXPECT_EQ(record.at("steps_quiet").get<long>(), totals().steps_quiet);
  EXPECT_EQ(record.at("steps_writing_excess_s").get<double>(), totals().steps_writing_excess_s);
}

TEST(H5, ARenameThatFailsFailsTheRunOnEveryRank) {
  const Scratch scratch;
  const IoOptions options = checkpoints_in(scratch, 10);
  IoSession io(MPI_COMM_WORLD, options, "rb3d", nlohmann::json(kGlobal), "1x1");
  // Something takes the checkpoint's name while it is written: a directory holding a file, which no rename
  // replaces. Rank 0's background writer renames; its failure must reach every rank's finish(), by its reason.
  if (test::World().rank == 0) {
    fs::create_directories(options.checkpoint_path);
    std::ofstream(fs::path(options.checkpoint_path) / "occupied") << "x";
  }
  MPI_Barrier(MPI_COMM_WORLD);
  checkpoint_field(io, 10, filled(split_along(kGlobal, 1), 1));
  for (int step = 0; step < 50; ++step) io.progress();
  std::string reason;
  try {
    io.finish();
  } catch (const IoError& e) {
    reason = e.what();
  }
  const std::string expected = "cannot rename " + options.checkpoint_path + ".tmp to " + options.checkpoint_path;
  EXPECT_NE(reason.find(expected), std::string::npos) << "finish() said: '" << reason << "'";
  EXPECT_EQ(io.totals().checkpoints, 0);
}

/// Stages pieces around block boundaries (a head before the first boundary, whole blocks, a tail; a piece within
/// one block; one whose buffer place cannot match its file offset) into a file of `path`'s directory, writes them
/// and returns the report; every byte of the file must be the staged one, the rest untouched.
StagedWrite write_staged_and_compare(const std::string& path, std::size_t alignment) {
  const std::size_t block = std::max<std::size_t>(alignment, 4096), size = 8 * block;
  std::vector<std::byte> expected(size);
  for (std::size_t i = 0; i < size; ++i) expected[i] = std::byte((i * 131 + 7) % 251);
  {
    std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(expected.data()), std::streamsize(size));
  }
  StagedData staged(alignment);
  const auto stage = [&](std::uint64_t at, std::size_t bytes) {
    const std::size_t offset = staged.reserve(bytes, at);
    for (std::size_t i = 0; i < bytes; ++i) {
      expected[at + i] = std::byte((at + i) * 17 % 253);
      staged.data()[offset + i] = expected[at + i];
    }
    staged.add_piece(at, offset, bytes);
  };
  stage(block / 2 + 8, 3 * block);       // head, two whole blocks, tail
  stage(5 * block + 16, 40);             // inside one block
  stage(6 * block, block + block / 2);   // starts on a boundary
  const StagedWrite report = staged.write_into(path);
  std::ifstream in(path, std::ios::binary);
  std::vector<std::byte> read(size);
  in.read(reinterpret_cast<char*>(read.data()), std::streamsize(size));
  EXPECT_EQ(in.gcount(), std::streamsize(size));
  EXPECT_TRUE(read == expected) << "the bytes written differ from those staged";
  EXPECT_EQ(report.direct_bytes + report.buffered_bytes, double(3 * block + 40 + block + block / 2));
  return report;
}

TEST(H5, StagedWriteGoesDirectWhereTheFileSystemAllowsIt) {
  const Scratch scratch;
  if (test::World().rank != 0) return;
  const std::string path = scratch.file("direct.bin");
  { std::ofstream(path).put('x'); }
  const std::size_t alignment = direct_io_alignment(path);
  if (alignment == 0) GTEST_SKIP() << "/tmp reports no direct I/O alignment";
  EXPECT_EQ(alignment % std::size_t(::sysconf(_SC_PAGESIZE)), 0u);
  const StagedWrite report = write_staged_and_compare(path, alignment);
  // The whole blocks of the first and the last piece: 2 + 1.
  EXPECT_EQ(report.direct_bytes, double(3 * alignment));
  EXPECT_EQ(report.buffered_reason, "");
  // Staged without the alignment, the pieces' places in the buffer match no block boundary: all buffered.
  EXPECT_EQ(write_staged_and_compare(path, 0).direct_bytes, 0.0);
}

TEST(H5, StagedWriteFallsBackToThePageCacheOnTmpfs) {
  if (!fs::is_directory("/dev/shm")) GTEST_SKIP() << "no /dev/shm";
  const Scratch scratch("/dev/shm");
  if (test::World().rank != 0) return;
  const std::string path = scratch.file("buffered.bin");
  { std::ofstream(path).put('x'); }
  // Staged as a checkpoint stages it: with the alignment its file system reports, none here.
  const std::size_t alignment = direct_io_alignment(path);
  EXPECT_EQ(alignment, 0u);
  const StagedWrite report = write_staged_and_compare(path, alignment);
  EXPECT_EQ(report.direct_bytes, 0.0);
  EXPECT_EQ(report.buffered_reason, "the file system reports no direct I/O alignment");
}

/// Checkpoints a field large enough for whole blocks per rank at `directory`, restarts from it into another
/// decomposition and returns the session's totals: the values must come back bit for bit.
IoTotals checkpoint_and_read_back(const Scratch& scratch) {
  const std::array<long, 3> global{64, 48, 40};
  const IoOptions options = checkpoints_in(scratch, 1);
  const nlohmann::json size = global;
  const Grid3D<double> field = filled(split_along(global, 1), 1);
  IoSession io(MPI_COMM_WORLD, options, "rb3d", size, "1x1");
  io.checkpoint(1, 0.0, {{"k", 1}}, [&](File& f) { f.write("u", Block3::of(field, global), field.data()); });
  io.finish();
  CheckpointReader reader(MPI_COMM_WORLD, options.checkpoint_path, H5Options{}, "rb3d", size);
  Grid3D<double> read(split_along(global, 2), 1);
  reader.file().read("u", Block3::of(read, global), read.data());
  reader.file().close();
  EXPECT_EQ(mismatches(read), 0);
  if (test::World().rank == 0) {
    EXPECT_EQ(check_checkpoint_file(options.checkpoint_path, "rb3d", size, {}).step, 1);
  }
  const IoTotals totals = io.totals();
  EXPECT_EQ(totals.checkpoint_direct_bytes + totals.checkpoint_buffered_bytes,
            double(global[0] * global[1] * global[2]) * 8.0 / test::World().size)
      << "rank " << test::World().rank << " of equal parts";
  return totals;
}

TEST(H5, CheckpointGoesDirectAndRestartsBitwise) {
  const Scratch scratch;
  const std::string probe = scratch.file("probe");
  if (test::World().rank == 0) std::ofstream(probe).put('x');
  MPI_Barrier(MPI_COMM_WORLD);
  if (direct_io_alignment(probe) == 0) GTEST_SKIP() << "/tmp reports no direct I/O alignment";
  const IoTotals totals = checkpoint_and_read_back(scratch);
  // Each rank's part of a z plane, 64 x 48/size doubles, is one run of 6 KiB or more (at up to 4 ranks; 4 KiB
  // blocks): most of it goes direct.
  EXPECT_GT(totals.checkpoint_direct_bytes, totals.checkpoint_buffered_bytes);
  EXPECT_EQ(totals.checkpoint_buffered_reason, "");
}

TEST(H5, CheckpointOnTmpfsIsBufferedAndSaysWhy) {
  if (!fs::is_directory("/dev/shm")) GTEST_SKIP() << "no /dev/shm";
  const Scratch scratch("/dev/shm");
  const IoTotals totals = checkpoint_and_read_back(scratch);
  EXPECT_EQ(totals.checkpoint_direct_bytes, 0.0);
  EXPECT_EQ(totals.checkpoint_buffered_reason, "the file system reports no direct I/O alignment");
}

TEST(H5, SnapshotsGetAnXdmfSidecar) {
  const Scratch scratch;
  const test::World world;
  const Grid3D<double> field = filled(split_along(kGlobal, 2), 1);
  SnapshotSeries series(MPI_COMM_WORLD, scratch.file("snap"), H5Options{});
  const SnapshotField fields[] = {{"", "u", Block3::of(field, kGlobal), field.data(), {0, 0, 0}, {0.5, 0.5, 0.5}}};
  EXPECT_GT(series.write(0, 0.0, fields), 0.0);
  EXPECT_GT(series.write(5, 1.5, fields), 0.0);
  if (world.rank == 0) {
    std::ifstream in(scratch.file("snap.xmf"));
    const std::string xmf{std::istreambuf_iterator<char>(in), {}};
    EXPECT_NE(xmf.find("snap-000005.h5:/u"), std::string::npos) << xmf;
    EXPECT_NE(xmf.find("Dimensions=\"6 5 7\""), std::string::npos) << xmf;
    EXPECT_NE(xmf.find("<Time Value=\"1.5\"/>"), std::string::npos) << xmf;
    EXPECT_TRUE(fs::exists(scratch.file("snap.snapshots.json")));
  }
}

TEST(H5, BadOptionsNameTheValue) {
  EXPECT_THROW(parse_hint("romio_cb_write"), InvalidArgument);
  EXPECT_THROW(parse_hint("=enable"), InvalidArgument);
  EXPECT_EQ(parse_hint("cb_buffer_size=1048576").second, "1048576");
  H5Options options;
  options.chunk = {4, 0, 4};
  EXPECT_THROW(options.validate(), InvalidArgument);
  EXPECT_THROW(parse_precision("half"), InvalidArgument);
  IoOptions io;
  io.checkpoint_every = 5;
  EXPECT_THROW(io.validate(), InvalidArgument);
  io.checkpoint_path = "/nonexistent-dir/c.h5";
  EXPECT_THROW(io.validate(), InvalidArgument);
  io = IoOptions{};
  io.restart_path = "/nonexistent-dir/c.h5";
  EXPECT_THROW(io.validate(), BadFile);
}
