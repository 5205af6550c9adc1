// A main for any LLVMFuzzerTestOneInput target, for compilers without libFuzzer (g++):
//   TARGET [-runs=N] [-seed=S] [-max_total_time=SECONDS] [-artifact_prefix=P] PATH...
// feeds every file named (a directory: the files in it) once, then N inputs made from them by
// seeded random mutations (byte and bit changes, integers near the input's size written at
// aligned offsets, cuts, inserts, erases, splices of two inputs), stopping early after
// SECONDS. No coverage guidance: the mutations are biased toward what the readers parse
// (header-sized integers, offsets and sizes). Each input sits in a heap block of its exact
// size, so under AddressSanitizer a read one byte past it is caught; on a sanitizer report
// the input is written to P + "crash-<run>" for `TARGET that-file` to replay.
#include <dirent.h>
#include <sanitizer/common_interface_defs.h>
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <memory>
#include <random>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

using Bytes = std::vector<uint8_t>;

// The input being run, for the death callback.
const Bytes* current = nullptr;
std::string artifact;

void SaveCurrent() {
  if (current == nullptr) return;
  FILE* f = std::fopen(artifact.c_str(), "wb");
  if (f == nullptr) return;
  if (!current->empty()) std::fwrite(current->data(), 1, current->size(), f);
  std::fclose(f);
  std::fprintf(stderr, "standalone_main: input written to %s\n", artifact.c_str());
}

void Run(const Bytes& input, const std::string& name) {
  current = &input;
  artifact = name;
  // An exact-size copy: a vector's buffer may have slack ASan would not flag.
  std::unique_ptr<uint8_t[]> copy(new uint8_t[input.size() + (input.empty() ? 1 : 0)]);
  if (!input.empty()) std::memcpy(copy.get(), input.data(), input.size());
  LLVMFuzzerTestOneInput(copy.get(), input.size());
  current = nullptr;
}

bool ReadFile(const std::string& path, Bytes* out) {
  std::ifstream file(path, std::ios::binary);
  if (!file) return false;
  out->assign(std::istreambuf_iterator<char>(file), {});
  return true;
}

void AddPath(const std::string& path, std::vector<Bytes>* seeds) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0) {
    std::fprintf(stderr, "standalone_main: cannot read %s\n", path.c_str());
    std::exit(2);
  }
  if (!S_ISDIR(st.st_mode)) {
    Bytes bytes;
    if (!ReadFile(path, &bytes)) {
      std::fprintf(stderr, "standalone_main: cannot read %s\n", path.c_str());
      std::exit(2);
    }
    seeds->push_back(std::move(bytes));
    return;
  }
  std::vector<std::string> names;
  if (DIR* dir = opendir(path.c_str())) {
    while (dirent* entry = readdir(dir)) {
      if (entry->d_name[0] != '.') names.push_back(path + "/" + entry->d_name);
    }
    closedir(dir);
  }
  std::sort(names.begin(), names.end());  // the same order, so the same seed gives the same runs
  for (const std::string& name : names) AddPath(name, seeds);
}

class Mutator {
 public:
  explicit Mutator(uint64_t seed) : rng_(seed) {}

  // 1 to 8 stacked mutations of `input`; `other` is a second input to splice from.
  Bytes Mutate(Bytes input, const Bytes& other) {
    const int count = 1 + static_cast<int>(Below(8));
    for (int i = 0; i < count; ++i) MutateOnce(&input, other);
    return input;
  }

 private:
  uint64_t Below(uint64_t n) { return n == 0 ? 0 : rng_() % n; }

  // An offset: half the time in the first 128 bytes, where the headers sit; aligned to
  // `align` (the integer fields of the formats read here are naturally aligned).
  size_t Offset(size_t size, size_t align) {
    if (size < align) return 0;
    const size_t limit = Below(2) == 0 ? std::min<size_t>(size, 128) : size;
    return (Below(limit - align + 1) / align) * align;
  }

  // An integer a reader may choke on: 0, 1, all ones, the sign bit, near the input's size,
  // small, the value already there plus or minus a little, or what makes the field before
  // it (an offset, when this is a size) end at the input's end, give or take a byte.
  uint64_t Interesting(uint64_t size, uint64_t old, uint64_t before) {
    switch (Below(9)) {
      case 8:
        return size - before + Below(3) - 1;
      case 0:
        return 0;
      case 1:
        return Below(2) ? 1 : ~uint64_t{0};
      case 2:
        return uint64_t{1} << Below(64);
      case 3:
        return size - 8 + Below(17);
      case 4:
        return Below(256);
      case 5:
        return old + Below(33) - 16;
      case 6:
        return old * 2;
      default:
        return rng_();
    }
  }

  void MutateOnce(Bytes* b, const Bytes& other) {
    const size_t n = b->size();
    switch (Below(9)) {
      case 0:  // flip a bit
        if (n) (*b)[Below(n)] ^= static_cast<uint8_t>(1u << Below(8));
        break;
      case 1:  // a random byte
        if (n) (*b)[Below(n)] = static_cast<uint8_t>(rng_());
        break;
      case 2:
      case 3: {  // an integer field of 2, 4 or 8 bytes
        const size_t width = size_t{2} << Below(3);
        if (n < width) break;
        const size_t at = Offset(n, width);
        uint64_t old = 0, before = 0;
        std::memcpy(&old, b->data() + at, width);
        if (at >= width) std::memcpy(&before, b->data() + at - width, width);
        const uint64_t value = Interesting(n, old, before);
        std::memcpy(b->data() + at, &value, width);  // little-endian host
        break;
      }
      case 4:  // cut
        b->resize(Below(n + 1));
        break;
      case 5: {  // erase a chunk
        if (n == 0) break;
        const size_t at = Below(n), len = 1 + Below(std::min<size_t>(n - at, 64));
        b->erase(b->begin() + at, b->begin() + at + len);
        break;
      }
      case 6: {  // insert random bytes
        const size_t at = Below(n + 1), len = 1 + Below(16);
        Bytes add(len);
        for (uint8_t& c : add) c = static_cast<uint8_t>(rng_());
        b->insert(b->begin() + at, add.begin(), add.end());
        break;
      }
      case 7: {  // copy a chunk of the input over another place of it
        if (n < 2) break;
        const size_t from = Below(n), to = Below(n);
        const size_t len = 1 + Below(std::min(n - from, n - to));
        std::memmove(b->data() + to, b->data() + from, len);
        break;
      }
      default: {  // splice: this input's head, the other's tail
        if (other.empty()) break;
        const size_t head = Below(n + 1), tail = Below(other.size());
        b->resize(head);
        b->insert(b->end(), other.begin() + tail, other.end());
        break;
      }
    }
  }

  std::mt19937_64 rng_;
};

bool Flag(const char* arg, const char* name, std::string* value) {
  const size_t len = std::strlen(name);
  if (std::strncmp(arg, name, len) != 0) return false;
  *value = arg + len;
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  uint64_t runs = 10000, seed = 1;
  double max_seconds = 0;
  std::string prefix = "./", value;
  std::vector<Bytes> seeds;
  for (int i = 1; i < argc; ++i) {
    if (Flag(argv[i], "-runs=", &value)) {
      runs = std::strtoull(value.c_str(), nullptr, 10);
    } else if (Flag(argv[i], "-seed=", &value)) {
      seed = std::strtoull(value.c_str(), nullptr, 10);
    } else if (Flag(argv[i], "-max_total_time=", &value)) {
      max_seconds = std::strtod(value.c_str(), nullptr);
    } else if (Flag(argv[i], "-artifact_prefix=", &value)) {
      prefix = value;
    } else if (argv[i][0] == '-') {
      std::fprintf(stderr, "standalone_main: unknown flag %s\n", argv[i]);
      return 2;
    } else {
      AddPath(argv[i], &seeds);
    }
  }
  __sanitizer_set_death_callback(SaveCurrent);
  const auto start = std::chrono::steady_clock::now();
  for (size_t i = 0; i < seeds.size(); ++i)
    Run(seeds[i], prefix + "crash-seed-" + std::to_string(i));
  Mutator mutator(seed);
  uint64_t done = 0;
  for (; !seeds.empty() && done < runs; ++done) {
    if (max_seconds > 0 && done % 64 == 0 &&
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() >
            max_seconds) {
      break;
    }
    const Bytes& base = seeds[done % seeds.size()];
    const Bytes& other = seeds[(done / seeds.size() + 1) % seeds.size()];
    Run(mutator.Mutate(base, other), prefix + "crash-" + std::to_string(done));
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::fprintf(stderr, "standalone_main: %zu inputs and %llu mutations in %.1f s (seed %llu)\n",
               seeds.size(), static_cast<unsigned long long>(done), seconds,
               static_cast<unsigned long long>(seed));
  return 0;
}
