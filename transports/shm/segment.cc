#include "transports/shm/segment.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <random>
#include <utility>

#include "transports/shm/usable_cpus.h"

namespace hvd::transports::shm {

namespace {

constexpr size_t kPage = 4096;

size_t page_align(size_t bytes) { return (bytes + kPage - 1) / kPage * kPage; }

struct Layout {
  size_t slots_offset;
  size_t data_offset;
  size_t staging_bytes;
  size_t result_bytes;
  size_t total_bytes;
};

Layout layout_for(int size, size_t staging_bytes) {
  Layout l{};
  auto ranks = static_cast<size_t>(size);
  l.slots_offset = page_align(sizeof(SegmentHeader));
  l.data_offset = l.slots_offset + page_align(ranks * sizeof(RankSlot));
  l.staging_bytes = page_align(staging_bytes);
  // The largest reduced slice of a round: ceil(staging / size) bytes rounded
  // up to whole elements (8 bytes at most).
  l.result_bytes = page_align((l.staging_bytes + ranks - 1) / ranks + 64);
  l.total_bytes = l.data_offset + ranks * 2 * (l.staging_bytes + l.result_bytes);
  return l;
}

std::string errno_text(int error) { return std::strerror(error); }

common::Result<void*> map(int fd, size_t bytes, const std::string& name) {
  void* base = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (base == MAP_FAILED) {
    return common::unavailable("cannot map shared-memory segment " + name + ": " + errno_text(errno));
  }
  return base;
}

}  // namespace

Segment::Segment(void* base, size_t bytes, int size, size_t data_offset, size_t staging_bytes,
                 size_t result_bytes)
    : base_(base),
      bytes_(bytes),
      size_(size),
      data_offset_(data_offset),
      staging_bytes_(staging_bytes),
      result_bytes_(result_bytes) {}

Segment::Segment(Segment&& other) noexcept
    : base_(std::exchange(other.base_, nullptr)),
      bytes_(other.bytes_),
      size_(other.size_),
      data_offset_(other.data_offset_),
      staging_bytes_(other.staging_bytes_),
      result_bytes_(other.result_bytes_),
      fd_(std::exchange(other.fd_, -1)),
      locator_(std::move(other.locator_)) {}

Segment::~Segment() {
  close_locator();
  if (base_ != nullptr) munmap(base_, bytes_);
}

void Segment::close_locator() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  locator_.clear();
}

namespace {

// Sizes, maps and initialises the segment behind `fd` (new, empty) laid out
// as `l`; `what` names it in errors. The caller closes `fd`.
common::Result<void*> initialise(int fd, const std::string& what, int size, const Layout& l) {
  // Reserve the pages now: with no memory left a later first touch would be
  // a SIGBUS instead of this error.
  int error = ftruncate(fd, static_cast<off_t>(l.total_bytes)) != 0 ? errno
              : posix_fallocate(fd, 0, static_cast<off_t>(l.total_bytes));
  if (error != 0) {
    return common::unavailable("cannot size shared-memory segment " + what + " to " +
                               std::to_string(l.total_bytes >> 20) + " MiB (" + errno_text(error) +
                               "; too little shared memory?)");
  }
  auto base = map(fd, l.total_bytes, what);
  if (!base.is_ok()) return base.status();
  auto* h = static_cast<SegmentHeader*>(base.value());
  h->version = kSegmentVersion;
  h->size = size;
  h->staging_bytes = l.staging_bytes;
  h->result_bytes = l.result_bytes;
  h->total_bytes = l.total_bytes;
  h->crowded = size > usable_cpus() ? 1 : 0;
  std::random_device random;
  h->nonce = (uint64_t{random()} << 32) | random();
  std::atomic_ref<uint64_t>(h->magic).store(kSegmentMagic, std::memory_order_release);
  return base;
}

}  // namespace

common::Result<Segment> Segment::create_anonymous(int size, size_t staging_bytes) {
  int fd = memfd_create("hvd-shm", MFD_CLOEXEC);
  if (fd < 0) return common::unavailable("cannot create a shared-memory segment: " + errno_text(errno));
  Layout l = layout_for(size, staging_bytes);
  auto base = initialise(fd, "(anonymous)", size, l);
  if (!base.is_ok()) {
    ::close(fd);
    return base.status();
  }
  Segment segment(base.value(), l.total_bytes, size, l.data_offset, l.staging_bytes, l.result_bytes);
  segment.fd_ = fd;
  segment.locator_ = "/proc/" + std::to_string(getpid()) + "/fd/" + std::to_string(fd);
  return segment;
}

common::Result<Segment> Segment::create(const std::string& name, int size, size_t staging_bytes) {
  int fd = shm_open(name.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) {
    return common::unavailable("cannot create shared-memory segment " + name + ": " + errno_text(errno));
  }
  Layout l = layout_for(size, staging_bytes);
  auto base = initialise(fd, name, size, l);
  ::close(fd);
  if (!base.is_ok()) {
    unlink(name);
    return base.status();
  }
  return Segment(base.value(), l.total_bytes, size, l.data_offset, l.staging_bytes, l.result_bytes);
}

common::Result<Segment> Segment::attach(const std::string& where, int size, uint64_t nonce) {
  bool anonymous = where.rfind("/proc/", 0) == 0;
  int fd = anonymous ? ::open(where.c_str(), O_RDWR | O_CLOEXEC) : shm_open(where.c_str(), O_RDWR | O_CLOEXEC, 0);
  if (fd < 0) {
    return common::unavailable(
        "cannot open shared-memory segment " + where + ": " + errno_text(errno) +
        (anonymous ? " (did its creator, rank 0, exit? is this rank in its pid namespace?)"
                   : " (is this rank on the creator's host, with the same /dev/shm?)"));
  }
  struct stat st {};
  if (fstat(fd, &st) != 0 || static_cast<size_t>(st.st_size) < sizeof(SegmentHeader)) {
    ::close(fd);
    return common::unavailable("shared-memory segment " + where + " is too small to be a segment");
  }
  auto bytes = static_cast<size_t>(st.st_size);
  auto base = map(fd, bytes, where);
  ::close(fd);
  if (!base.is_ok()) return base.status();
  const auto& h = *static_cast<SegmentHeader*>(base.value());
  uint64_t magic = std::atomic_ref<const uint64_t>(h.magic).load(std::memory_order_acquire);
  Layout l = layout_for(size, h.staging_bytes);
  if (magic != kSegmentMagic || h.version != kSegmentVersion || h.size != size ||
      h.total_bytes != bytes || l.total_bytes != bytes || l.staging_bytes != h.staging_bytes ||
      h.nonce != nonce) {
    uint32_t version = h.version;  // read before the mapping goes
    munmap(base.value(), bytes);
    return common::unavailable("shared-memory segment " + where + " is not an hvd segment for " +
                               std::to_string(size) + " ranks (version " + std::to_string(version) + ")");
  }
  return Segment(base.value(), bytes, size, l.data_offset, l.staging_bytes, l.result_bytes);
}

void Segment::unlink(const std::string& name) { shm_unlink(name.c_str()); }

RankSlot& Segment::slot(int rank) const {
  auto* slots = static_cast<std::byte*>(base_) + page_align(sizeof(SegmentHeader));
  return reinterpret_cast<RankSlot*>(slots)[rank];
}

std::byte* Segment::staging(int rank, int half) const {
  size_t region = static_cast<size_t>(rank) * 2 + static_cast<size_t>(half);
  return static_cast<std::byte*>(base_) + data_offset_ + region * (staging_bytes_ + result_bytes_);
}

std::byte* Segment::result(int rank, int half) const { return staging(rank, half) + staging_bytes_; }

}  // namespace hvd::transports::shm
